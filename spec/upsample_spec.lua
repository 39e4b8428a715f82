-- upsample_nearest over 1..3 spatial dims and upsample_bilinear2d (core/ops/pool.c) through
-- fnn.upsample and nn.UpSampling1d/2d/3d, against naive loops written here: integer factors per
-- dim, output sizes up and down at ratios that are not integers, bilinear with half-pixel centres
-- and with align_corners, one-pixel inputs and outputs, unbatched and non-contiguous inputs;
-- gradients against the naive adjoints (also on a size split over threads); output shapes; and
-- the errors, at the caller's line.
local ffi = require 'ffi'
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local floor, min, max = math.floor, math.min, math.max
local err_of, each_index = support.err_of, support.each_index

local function approx(expected, t, tol) return support.approx(expected, t, tol or 1e-5) end

local function prod(t, i, j)
   local n = 1
   for a = i or 1, j or #t do n = n * t[a] end
   return n
end

-- ---------------------------------------------------------------------------
-- naive references: each output element as a weighted sum of input elements, f(out, in, weight)
-- visiting every term; positions are 1-based and flat over the whole tensor

-- nearest: output o (0-based) of an axis reads input floor(o * in / out)
local function nearest_terms(xs, dims, size, f)
   local lead = #xs - dims
   local ins = {}
   for a = 1, dims do ins[a] = xs[lead + a] end
   local planes, pin, pout = prod(xs, 1, lead), prod(ins), prod(size)
   for pl = 0, planes - 1 do
      each_index(size, function(oi)
         local ii = {}
         for a = 1, dims do ii[a] = floor((oi[a] - 1) * ins[a] / size[a]) + 1 end
         f(pl * pout + support.pos(size, oi), pl * pin + support.pos(ins, ii), 1)
      end)
   end
end

-- bilinear along one axis: the (input, weight) pairs of output o (0-based), the source index and
-- the weights rounded to float at each step as PyTorch computes them for float tensors (so that a
-- weight is 0 exactly where the kernel's is)
local f32box = ffi.new('float[1]')
local function f32(v) f32box[0] = v; return f32box[0] end
local function linear_taps(o, n_in, n_out, align_corners)
   local src
   if align_corners then
      src = n_out > 1 and f32(f32((n_in - 1) / (n_out - 1)) * o) or 0
   else
      src = max(f32(f32(f32(n_in / n_out) * f32(o + 0.5)) - 0.5), 0)
   end
   local i0 = min(floor(src), n_in - 1)
   local i1 = min(i0 + 1, n_in - 1)
   local l = f32(src - i0)
   if i1 == i0 then return {{i0, 1}} end   -- the last input read twice: one tap (the kernel's lists)
   return {{i0, f32(1 - l)}, {i1, l}}
end

local function bilinear_terms(xs, size, align_corners, f)
   local nd = #xs
   local H, W = xs[nd - 1], xs[nd]
   local planes = prod(xs, 1, nd - 2)
   for pl = 0, planes - 1 do
      for oy = 0, size[1] - 1 do
         local ty = linear_taps(oy, H, size[1], align_corners)
         for ox = 0, size[2] - 1 do
            local tx = linear_taps(ox, W, size[2], align_corners)
            local yi = (pl * size[1] + oy) * size[2] + ox + 1
            for _, a in ipairs(ty) do
               for _, b in ipairs(tx) do f(yi, (pl * H + a[1]) * W + b[1] + 1, a[2] * b[2]) end
            end
         end
      end
   end
end

-- the output values and, for an output gradient g (flat), the input gradient, from the terms
-- that terms(f) visits
local function apply(x, g, terms)
   local v, y, dx = x:to_flat(), {}, {}
   for i = 1, #v do dx[i] = 0 end
   terms(function(yi, xi, w)
      y[yi] = (y[yi] or 0) + w * v[xi]
      if g then dx[xi] = dx[xi] + w * g[yi] end
   end)
   return y, dx
end
local function naive_nearest(x, dims, size, g)
   return apply(x, g, function(f) nearest_terms(x:shape(), dims, size, f) end)
end
local function naive_bilinear(x, size, align_corners, g)
   return apply(x, g, function(f) bilinear_terms(x:shape(), size, align_corners, f) end)
end

local function out_shape(xs, dims, size)
   local s = {}
   for i = 1, #xs - dims do s[i] = xs[i] end
   for a = 1, dims do s[#s + 1] = size[a] end
   return s
end

-- ---------------------------------------------------------------------------

describe('upsample, nearest', function()
   it('repeats by integer factors per spatial dim (1, 2 and 3 of them)', function()
      fnn.manual_seed(1)
      for _, c in ipairs{{{2, 3, 5}, 3}, {{2, 2, 3, 4}, {2, 3}}, {{1, 2, 2, 3, 2}, {2, 1, 3}}, {{2, 3, 4}, {1, 2}}} do
         local x = fnn.randn(c[1])
         local dims = type(c[2]) == 'table' and #c[2] or #c[1] - 2
         local size = {}
         for a = 1, dims do
            size[a] = c[1][#c[1] - dims + a] * (type(c[2]) == 'table' and c[2][a] or c[2])
         end
         local y = fnn.upsample(x, {scale_factor = c[2]})
         assert.same(out_shape(c[1], dims, size), y:shape())
         approx((naive_nearest(x, dims, size)), y)
      end
   end)

   it('resizes to any size, up or down, by floor(o * in / out)', function()
      fnn.manual_seed(2)
      for _, c in ipairs{{{1, 2, 13}, {31}}, {{1, 2, 7}, {3}}, {{2, 2, 5, 7}, {7, 3}}, {{1, 2, 3, 4, 5}, {5, 8, 2}},
                         {{3, 1, 1}, {1, 4}}, {{2, 5}, {1}}} do
         local x = fnn.randn(c[1])
         local y = fnn.upsample(x, {size = c[2]})   -- a table: as many spatial dims as it lists
         assert.same(out_shape(c[1], #c[2], c[2]), y:shape())
         approx((naive_nearest(x, #c[2], c[2])), y)
      end
      -- PyTorch: [1..7] to 3 is {1, 3, 5}; [1..5] to 7 is {1, 1, 2, 3, 3, 4, 5}
      approx({1, 3, 5}, fnn.upsample(fnn.arange(1, 8):float():reshape(1, 1, 7), {size = 3}))
      approx({1, 1, 2, 3, 3, 4, 5}, fnn.upsample(fnn.arange(1, 6):float():reshape(1, 1, 5), {size = 7}))
   end)

   it('reads non-contiguous inputs', function()
      fnn.manual_seed(3)
      local x = fnn.randn(2, 5, 3, 4):permute(1, 3, 4, 2)   -- [2, 3, 4, 5]
      local y = fnn.upsample(x, {size = {5, 6}})
      approx((naive_nearest(x:contiguous(), 2, {5, 6})), y)
   end)

   it('sums the gradient of every output that read an input (zero where none did)', function()
      for i, c in ipairs{{{2, 2, 3, 4}, {7, 9}}, {{1, 2, 7}, {3}}, {{2, 2, 3, 2}, {3, 5, 3}}, {{1, 1, 6, 6}, {4, 9}}} do
         fnn.manual_seed(10 + i)
         local px = fnn.Param(fnn.randn(c[1]))
         local y = fnn.upsample(px:tensor(), {size = c[2]})
         local g = fnn.randn(y:shape())
         y:backward(g)
         local _, dx = naive_nearest(px:tensor():detach(), #c[2], c[2], g:to_flat())
         approx(dx, px:grad())
      end
   end)
end)

-- x as a Param through bilinear resizing to size, then backward from make_g(y's shape): the
-- Param, y and the gradient
local function bilinear_backward(x, size, align, make_g)
   local px = fnn.Param(x)
   local y = fnn.upsample(px:tensor(), {size = size, mode = 'bilinear', align_corners = align})
   local g = make_g(y:shape())
   y:backward(g)
   return px, y, g
end

describe('upsample, bilinear', function()
   local CASES = {
      {{2, 2, 5, 7}, {9, 4}}, {{1, 3, 4, 4}, {8, 8}}, {{1, 2, 6, 9}, {2, 3}}, {{1, 1, 1, 3}, {3, 1}},
      {{2, 3, 4}, {5, 5}},   -- unbatched
      {{1, 2, 3, 3}, {3, 3}}, {{1, 1, 2, 5}, {1, 7}},
   }

   for _, align in ipairs{false, true} do
      it(('matches the naive interpolation with align_corners = %s'):format(tostring(align)), function()
         for i, c in ipairs(CASES) do
            fnn.manual_seed(20 + i)
            local x = fnn.randn(c[1])
            local y = fnn.upsample(x, {size = c[2], mode = 'bilinear', align_corners = align})
            assert.same(out_shape(c[1], 2, c[2]), y:shape())
            approx((naive_bilinear(x, c[2], align)), y)
         end
      end)

      it(('has the naive adjoint as gradient with align_corners = %s'):format(tostring(align)), function()
         for i, c in ipairs(CASES) do
            fnn.manual_seed(30 + i)
            local px, _, g = bilinear_backward(fnn.randn(c[1]), c[2], align, fnn.randn)
            local _, dx = naive_bilinear(px:tensor():detach(), c[2], align, g:to_flat())
            approx(dx, px:grad())
         end
      end)
   end

   -- rows of 16 or more run in blocks of 8 lanes through a shuffle of a 16-wide window (forward:
   -- 8 outputs; backward: the r-th readers of 8 inputs), padded to each axis' most readers;
   -- blocks that spread wider (downsampling past 2, upsampling past 2 backward) and the tails
   -- run the scalar loop
   local WIDE = {
      {{2, 3, 5, 32}, {10, 64}}, {{1, 2, 4, 37}, {3, 81}}, {{1, 1, 3, 100}, {2, 30}},
      {{1, 2, 2, 64}, {3, 40}}, {{1, 1, 2, 20}, {4, 160}}, {{1, 1, 3, 16}, {5, 16}},
   }
   it('gives the naive values and adjoint on rows wide enough for vectors', function()
      for _, align in ipairs{false, true} do
         for i, c in ipairs(WIDE) do
            fnn.manual_seed(60 + i)
            local px, y, g = bilinear_backward(fnn.randn(c[1]), c[2], align, fnn.randn)
            local ry, rdx = naive_bilinear(px:tensor():detach(), c[2], align, g:to_flat())
            approx(ry, y)
            approx(rdx, px:grad())
         end
      end
   end)

   it('keeps the padding of the vector blocks out of non-finite gradients', function()
      -- every dy +inf: an input's gradient is +inf, or nan where one of its taps has weight 0
      -- (0 * inf, in the naive sum too); a pad lane that read the window would make nan of +inf
      for _, align in ipairs{false, true} do
         for _, c in ipairs(WIDE) do
            local px, _, g = bilinear_backward(fnn.randn(c[1]), c[2], align,
                                               function(shape) return fnn.ones(shape) * math.huge end)
            local _, rdx = naive_bilinear(px:tensor():detach(), c[2], align, g:to_flat())
            local got, infs = px:grad():to_flat(), 0
            for k = 1, #rdx do
               if rdx[k] ~= rdx[k] then
                  assert.is_true(got[k] ~= got[k], ('%s %s element %d: expected nan got %g'):format(tostring(align), fnn.shape_str(px:tensor()), k, got[k]))
               else
                  assert.equals(rdx[k], got[k])
                  infs = infs + 1
               end
            end
            assert.is_true(infs > 0)
         end
      end
   end)

   it('takes a scale factor and half-pixel centres by default', function()
      -- [1, 2] doubled: centres at -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to the last)
      approx({1, 1.25, 1.75, 2}, fnn.upsample(fnn.tensor({1, 2}, {1, 1, 1, 2}), {scale_factor = {1, 2}, mode = 'bilinear'}))
      approx({1, 4 / 3, 5 / 3, 2}, fnn.upsample(fnn.tensor({1, 2}, {1, 1, 1, 2}),
                                                {size = {1, 4}, mode = 'bilinear', align_corners = true}))
      fnn.manual_seed(40)
      local x = fnn.randn(2, 3, 5, 6)
      approx((naive_bilinear(x, {10, 12}, false)), fnn.upsample(x, {scale_factor = 2, mode = 'bilinear'}))
      local t = fnn.randn(2, 6, 5):transpose(2, 3)   -- non-contiguous [2, 5, 6]
      approx((naive_bilinear(t:contiguous(), {7, 3}, false)), fnn.upsample(t, {size = {7, 3}, mode = 'bilinear'}))
   end)

   it('splits large sizes over threads with the same result as one thread', function()
      -- both sizes are above the core's threading threshold (2^18 elements of work)
      fnn.manual_seed(41)
      local function run(threads, x, g, opts)
         local was = fnn.get_num_threads()
         fnn.set_num_threads(threads)
         local px = fnn.Param(x)
         local y = fnn.upsample(px:tensor(), opts)
         y:backward(g)
         fnn.set_num_threads(was)
         return y:to_flat(), px:grad():to_flat()
      end
      local x, g = fnn.randn(2, 8, 20, 24), fnn.randn(2, 8, 80, 96)
      local opts = {scale_factor = 4, mode = 'bilinear'}
      local y1, dx1 = run(1, x, g, opts)
      local y2, dx2 = run(2, x, g, opts)
      assert.same(y1, y2)
      assert.same(dx1, dx2)
      local ry, rdx = naive_bilinear(x, {80, 96}, false, g:to_flat())
      approx(ry, y1)
      approx(rdx, dx1, 1e-4)

      x, g = fnn.randn(2, 8, 32, 32), fnn.randn(2, 8, 128, 128)
      y1, dx1 = run(1, x, g, {scale_factor = 4})
      y2, dx2 = run(2, x, g, {scale_factor = 4})
      assert.same(y1, y2)
      assert.same(dx1, dx2)
      ry, rdx = naive_nearest(x, 2, {128, 128}, g:to_flat())
      approx(ry, y1)
      approx(rdx, dx1, 1e-4)
   end)
end)

describe('nn.UpSampling1d/2d/3d', function()
   it('take Keras\' integer factors (default 2) or a fixed size', function()
      fnn.manual_seed(50)
      local x1, x2, x3 = fnn.randn(2, 3, 5), fnn.randn(2, 3, 4, 5), fnn.randn(1, 2, 2, 3, 4)
      approx((naive_nearest(x1, 1, {10})), nn.UpSampling1d()(x1))
      approx((naive_nearest(x1, 1, {15})), nn.UpSampling1d(3)(x1))
      approx((naive_nearest(x1, 1, {7})), nn.UpSampling1d{size = 7}(x1))
      approx((naive_nearest(x2, 2, {8, 15})), nn.UpSampling2d{2, 3}(x2))
      approx((naive_nearest(x2, 2, {12, 5})), nn.UpSampling2d{scale_factor = {3, 1}}(x2))
      approx((naive_nearest(x2, 2, {3, 7})), nn.UpSampling2d{size = {3, 7}}(x2))
      approx((naive_bilinear(x2, {8, 10}, false)), nn.UpSampling2d(2, {mode = 'bilinear'})(x2))
      approx((naive_bilinear(x2, {6, 9}, true)), nn.UpSampling2d{size = {6, 9}, mode = 'bilinear', align_corners = true}(x2))
      approx((naive_nearest(x3, 3, {2, 6, 8})), nn.UpSampling3d{1, 2, 2}(x3))
      approx((naive_nearest(x3:select(1, 1), 3, {4, 6, 8})), nn.UpSampling3d(2)(x3:select(1, 1)))   -- unbatched
      approx((naive_nearest(x2:select(1, 2), 2, {8, 10})), nn.UpSampling2d(2)(x2:select(1, 2)))
   end)

   it('name themselves and hold no parameters', function()
      assert.equals('nn.UpSampling1d(2)', tostring(nn.UpSampling1d()))
      assert.equals('nn.UpSampling2d(2x3)', tostring(nn.UpSampling2d{2, 3}))
      assert.equals('nn.UpSampling2d(2x2, bilinear)', tostring(nn.UpSampling2d(2, {mode = 'bilinear'})))
      assert.equals('nn.UpSampling2d(size 6x9, bilinear, align_corners)',
                    tostring(nn.UpSampling2d{size = {6, 9}, mode = 'bilinear', align_corners = true}))
      assert.equals('nn.UpSampling3d(1x2x2)', nn.UpSampling3d{1, 2, 2}:short_str())
      assert.equals(0, #nn.UpSampling2d():parameters())
   end)

   it('pass the gradient back through a model', function()
      fnn.manual_seed(51)
      local px = fnn.Param(fnn.randn(1, 2, 3, 3))
      local model = nn.Sequential(nn.UpSampling2d(2, {mode = 'bilinear'}), nn.AvgPool2d(2))
      local y = model(px:tensor())
      assert.same({1, 2, 3, 3}, y:shape())
      local g = fnn.randn(1, 2, 3, 3)
      y:backward(g)
      -- the adjoint of avg_pool 2x2 then of the bilinear upsampling, by loops
      local gv, up = g:to_flat(), {}
      for i = 1, 2 * 6 * 6 do up[i] = 0 end
      for pl = 0, 1 do
         for oy = 0, 5 do
            for ox = 0, 5 do
               up[(pl * 6 + oy) * 6 + ox + 1] = gv[(pl * 3 + floor(oy / 2)) * 3 + floor(ox / 2) + 1] / 4
            end
         end
      end
      local _, dx = naive_bilinear(px:tensor():detach(), {6, 6}, false, up)
      approx(dx, px:grad())
   end)
end)

describe('upsampling errors', function()
   local here = 'upsample_spec%.lua:%d+: '
   it('name the op, the mode and the shapes, at the caller\'s line', function()
      assert.matches(here .. "upsample: mode 'bilinear' needs 2 spatial dims, got input %[2,3,8%] with 1",
                     err_of(function() local _ = fnn.upsample(fnn.ones(2, 3, 8), {scale_factor = 2, mode = 'bilinear'}) end))
      assert.matches(here .. "upsample: mode 'bilinear' needs 2 spatial dims, got input %[1,1,2,2,2%] with 3",
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2, 2), {size = {4, 4, 4}, mode = 'bilinear'}) end))
      assert.matches(here .. 'upsample_nearest: output size 0x4 of input %[1,1,2,2%] is empty',
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), {size = {0, 4}}) end))
      assert.matches(here .. 'upsample_bilinear2d: output size 3x0 of input %[1,1,2,2%] is empty',
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), {size = {3, 0}, mode = 'bilinear'}) end))
      assert.matches(here .. 'upsample: scale factor 1.5 must be a positive integer',
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), {scale_factor = {1.5, 2}}) end))
      assert.matches(here .. 'upsample: scale factor 0 must be a positive integer',
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), {scale_factor = 0}) end))
      assert.matches(here .. 'upsample: give exactly one of size and scale_factor',
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), {size = 4, scale_factor = 2}) end))
      assert.matches(here .. 'upsample: give exactly one of size and scale_factor',
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), {mode = 'nearest'}) end))
      assert.matches(here .. "upsample: mode 'bicubic' is not one of 'nearest', 'bilinear'",
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), {size = 4, mode = 'bicubic'}) end))
      assert.matches(here .. "upsample: align_corners applies to mode 'bilinear' only",
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), {size = 4, align_corners = true}) end))
      assert.matches(here .. 'upsample: input %[4%] has 1 dims, expected %[N, C, ...%] with 1 to 3 spatial dims',
                     err_of(function() local _ = fnn.upsample(fnn.ones(4), {scale_factor = 2}) end))
      assert.matches(here .. 'upsample: input %[2,3,4,5%] must be %[N, C, L%] or %[C, L%] for 1 spatial dims',
                     err_of(function() local _ = fnn.upsample(fnn.ones(2, 3, 4, 5), {size = {3}}) end))
      assert.matches(here .. 'upsample: options must be a table like {scale_factor = 2}',
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2), 2) end))
      assert.matches(here .. 'upsample_nearest: expected a float32 tensor, got an int64',
                     err_of(function() local _ = fnn.upsample(fnn.ones(1, 1, 2, 2):long(), {scale_factor = 2}) end))
   end)

   it('come from the layers at the caller\'s line, naming them', function()
      assert.matches(here .. "nn%.UpSampling1d: mode 'bilinear' is for 2 spatial dims %(UpSampling2d%)",
                     err_of(function() local _ = nn.UpSampling1d(2, {mode = 'bilinear'}) end))
      assert.matches(here .. "nn%.UpSampling3d: mode 'bilinear' is for 2 spatial dims %(UpSampling2d%)",
                     err_of(function() local _ = nn.UpSampling3d{size = {2, 2, 2}, mode = 'bilinear'} end))
      assert.matches(here .. 'nn%.UpSampling2d: scale factor 0x2 must be positive',
                     err_of(function() local _ = nn.UpSampling2d{0, 2} end))
      assert.matches(here .. 'nn%.UpSampling2d: scale factor is a table of 3 values, expected an integer or a table {h, w}',
                     err_of(function() local _ = nn.UpSampling2d{2, 2, 2} end))
      assert.matches(here .. 'nn%.UpSampling2d: size 4x0 must be positive',
                     err_of(function() local _ = nn.UpSampling2d{size = {4, 0}} end))
      assert.matches(here .. 'UpSampling2d: input %[2,3%] must be %[N, C, H, W%] or %[C, H, W%]',
                     err_of(function() local _ = nn.UpSampling2d(2)(fnn.ones(2, 3)) end))
      assert.matches(here .. 'UpSampling3d: input %[2,3,4%] must be %[N, C, D, H, W%] or %[C, D, H, W%]',
                     err_of(function() local _ = nn.UpSampling3d(2):forward(fnn.ones(2, 3, 4)) end))
      assert.matches(here .. 'upsample_nearest: input %[1,2,0%] has an empty 0 plane',
                     err_of(function() local _ = nn.UpSampling1d(2)(fnn.ones(1, 2, 0)) end))
      assert.matches(here .. "nn%.UpSampling2d: align_corners applies to mode 'bilinear' only",
                     err_of(function() local _ = nn.UpSampling2d(2, {align_corners = true}) end))
   end)
end)
