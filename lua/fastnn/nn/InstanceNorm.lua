-- nn.InstanceNorm(num_features, {eps = 1e-5, momentum = 0.1, affine = false, track_running_stats = false}):
-- instance normalization of [N, C, *] (3 or more dims): each sample's channel normalized over its
-- spatial dims (a group norm with one group per channel), PyTorch's defaults. With affine,
-- weight Param ones [C] and bias Param zeros [C]; with track_running_stats, buffers running_mean
-- and running_var kept in training (batch means of the per-instance statistics) and used in eval.
-- nn.InstanceNorm1d/2d/3d check the layout and also take one unbatched sample.
return require('fastnn.nn._norm').instance_norm_class('InstanceNorm', nil, '[N, C, *] (3 or more dims)')
