-- nn.UpSampling3d(factor = 2): enlarges [N, C, D, H, W] (or [C, D, H, W]) by an integer factor per
-- spatial dim, a number or {fd, fh, fw} (Keras' size); nn.UpSampling3d{size = {d, h, w}} resizes
-- to a fixed output size instead. Mode 'nearest' only (output o reads input floor(o in / out)).
return require('fastnn.nn._pool').upsampling('UpSampling3d', 3)
