-- nn.UpSampling2d(factor = 2, {mode = 'nearest', align_corners = false}): enlarges [N, C, H, W]
-- (or [C, H, W]) by an integer factor per spatial dim, a number or {fh, fw} (Keras' size);
-- nn.UpSampling2d{size = {h, w}, mode = ...} resizes to a fixed output size instead.
-- mode 'nearest' (output o reads input floor(o in / out)) or 'bilinear': half-pixel centres, or
-- with align_corners = true the corner pixels of input and output aligned.
return require('fastnn.nn._pool').upsampling('UpSampling2d', 2)
