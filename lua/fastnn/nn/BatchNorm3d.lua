-- nn.BatchNorm3d(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true}):
-- batch normalization of volumes [N, C, D, H, W] over N, D, H, W per channel, PyTorch's layer.
-- Training normalizes with the batch's mean and biased variance and moves the buffers
-- running_mean, running_var toward the batch mean and unbiased variance:
-- running = (1 - momentum) running + momentum batch (momentum = false: a cumulative average),
-- counting num_batches_tracked; eval normalizes with the running stats. weight Param ones [C],
-- bias Param zeros [C] (absent when affine is false). One fused C node: fnn.batch_norm.
return require('fastnn.nn._norm').batch_norm_class('BatchNorm3d', {5}, '[N, C, D, H, W]')
