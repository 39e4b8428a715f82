-- nn.DepthwiseConv1d(channels, kernel, {depth_multiplier = 1, stride = 1, padding = 0, dilation = 1,
-- bias = true}): each of the channels convolved with depth_multiplier kernels of its own, over
-- [N, C, L] (or [C, L]) -> channels * depth_multiplier channels; a grouped nn.Conv1d with groups =
-- channels, run by the core's direct depthwise kernels. Padding: numbers, 'valid', 'same' or 'causal'.
-- weight Param [channels * depth_multiplier, 1, k], bias [channels * depth_multiplier],
-- both U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = prod(kernel) (PyTorch's default).
return require('fastnn.nn._conv').depthwise_class('DepthwiseConv1d', 1)
