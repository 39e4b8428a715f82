-- nn.BatchNorm2d(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true}):
-- batch normalization of images [N, C, H, W] over N, H, W per channel, PyTorch's layer.
-- Training normalizes with the batch's mean and biased variance and moves the buffers
-- running_mean, running_var toward the batch mean and unbiased variance:
-- running = (1 - momentum) running + momentum batch (momentum = false: a cumulative average),
-- counting num_batches_tracked; eval normalizes with the running stats. weight Param ones [C],
-- bias Param zeros [C] (absent when affine is false). One fused C node: fnn.batch_norm.
return require('fastnn.nn._norm').batch_norm_class('BatchNorm2d', {4}, '[N, C, H, W]')
