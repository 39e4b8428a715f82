-- nn.InstanceNorm3d(num_features, {eps = 1e-5, momentum = 0.1, affine = false, track_running_stats = false}):
-- instance normalization of [N, C, D, H, W] or [C, D, H, W] (see nn.InstanceNorm): each sample's channel
-- normalized over its spatial dims, PyTorch's layer and defaults.
return require('fastnn.nn._norm').instance_norm_class('InstanceNorm3d', 5, '[N, C, D, H, W] or [C, D, H, W]')
