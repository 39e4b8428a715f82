-- group_norm, instance_norm and nn.GroupNorm / nn.InstanceNorm / InstanceNorm1d/2d/3d against
-- the formulas computed here in Lua doubles: values per (sample, group) on [N, C], [N, C, L],
-- [N, C, H, W], [N, C, D, H, W], with and without affine tensors, non-contiguous input, a large
-- mean; gradients against the textbook rule; the same bits with one thread and with two; the
-- layers' defaults (PyTorch's: GroupNorm affine, InstanceNorm not, no running stats), unbatched
-- instance-norm input, instance norm's optional running stats; and the errors at the caller's line.
local fnn = require 'fastnn'
local support = require 'support'
local approx, err_of = support.approx, support.err_of
local nn = fnn.nn

-- naive group norm of flat xs over shape {N, C, ...}: y and per-(n, group) mean, rstd
local function naive_gn(xs, shape, G, w, b, eps)
   eps = eps or 1e-5
   local N, C = shape[1], shape[2]
   local S = 1
   for d = 3, #shape do S = S * shape[d] end
   local Cg = C / G
   local L = Cg * S
   local y, means, rstds = {}, {}, {}
   for n = 0, N - 1 do
      for g = 0, G - 1 do
         local base = (n * C + g * Cg) * S   -- the group is one contiguous run of L values
         local s = 0
         for k = 1, L do s = s + xs[base + k] end
         local mean = s / L
         local v = 0
         for k = 1, L do v = v + (xs[base + k] - mean) ^ 2 end
         local rstd = 1 / math.sqrt(v / L + eps)
         means[n * G + g + 1], rstds[n * G + g + 1] = mean, rstd
         for k = 1, L do
            local c = g * Cg + math.floor((k - 1) / S) + 1
            local val = (xs[base + k] - mean) * rstd
            if w then val = val * w[c] end
            if b then val = val + b[c] end
            y[base + k] = val
         end
      end
   end
   return y, means, rstds
end

-- gradients of sum(y * gy) by the textbook rule per group: dxhat = gy w,
-- dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dw = sum gy xhat, db = sum gy
local function naive_gn_grads(xs, shape, G, w, gy, eps)
   local N, C = shape[1], shape[2]
   local S = #xs / (N * C)
   local Cg = C / G
   local L = Cg * S
   local _, means, rstds = naive_gn(xs, shape, G, nil, nil, eps)
   local dx, dw, db = {}, {}, {}
   for c = 1, C do dw[c], db[c] = 0, 0 end
   for n = 0, N - 1 do
      for g = 0, G - 1 do
         local base = (n * C + g * Cg) * S
         local mean, rstd = means[n * G + g + 1], rstds[n * G + g + 1]
         local m1, m2 = 0, 0
         for k = 1, L do
            local c = g * Cg + math.floor((k - 1) / S) + 1
            local xhat = (xs[base + k] - mean) * rstd
            local d = gy[base + k] * (w and w[c] or 1)
            m1, m2 = m1 + d / L, m2 + d * xhat / L
            dw[c], db[c] = dw[c] + gy[base + k] * xhat, db[c] + gy[base + k]
         end
         for k = 1, L do
            local c = g * Cg + math.floor((k - 1) / S) + 1
            local xhat = (xs[base + k] - mean) * rstd
            local d = gy[base + k] * (w and w[c] or 1)
            dx[base + k] = rstd * (d - m1 - xhat * m2)
         end
      end
   end
   return dx, dw, db
end

describe('group_norm', function()
   it('normalizes per (sample, group) on every layout, with weight and bias', function()
      for _, case in ipairs{{{3, 6}, 3}, {{2, 4, 5}, 2}, {{2, 6, 3, 4}, 3}, {{2, 4, 2, 3, 3}, 1}, {{2, 8, 40}, 4}} do
         local shape, G = case[1], case[2]
         local C = shape[2]
         local x, w, b = fnn.randn(shape) * 2 + 1, fnn.randn(C), fnn.randn(C)
         local y = fnn.group_norm(x, G, w, b)
         assert.same(shape, y:shape())
         approx((naive_gn(x:to_flat(), shape, G, w:to_flat(), b:to_flat())), y, 1e-4)
      end
   end)

   it('works without weight, without bias, honours eps, and is a method', function()
      local shape = {2, 6, 5}
      local x, w, b = fnn.randn(shape), fnn.randn(6), fnn.randn(6)
      local xs = x:to_flat()
      approx((naive_gn(xs, shape, 2)), fnn.group_norm(x, 2), 1e-4)
      approx((naive_gn(xs, shape, 2, w:to_flat())), fnn.group_norm(x, 2, w), 1e-4)
      approx((naive_gn(xs, shape, 3, nil, b:to_flat())), x:group_norm(3, nil, b), 1e-4)
      approx((naive_gn(xs, shape, 6, nil, nil, 0.5)), fnn.group_norm(x, 6, nil, nil, {eps = 0.5}), 1e-5)
   end)

   it('reads a non-contiguous input and is stable for a large mean', function()
      local base = fnn.randn(2, 5, 4, 3)
      local x = base:transpose(2, 3)   -- [2, 4, 5, 3]
      approx((naive_gn(x:contiguous():to_flat(), {2, 4, 5, 3}, 2)), fnn.group_norm(x, 2), 1e-4)
      local big = fnn.randn(2, 4, 30) + 1e4
      approx((naive_gn(big:to_flat(), {2, 4, 30}, 2)), fnn.group_norm(big, 2), 2e-2)
   end)

   it('has gradients matching the textbook rule', function()
      for _, case in ipairs{{{3, 4, 6}, 2}, {{2, 6, 8, 8}, 3}} do
         local shape, G = case[1], case[2]
         local C = shape[2]
         local px, pw, pb = fnn.Param(fnn.randn(shape)), fnn.Param(fnn.randn(C)), fnn.Param(fnn.randn(C))
         local gy = fnn.randn(shape)
         fnn.group_norm(px:tensor(), G, pw:tensor(), pb:tensor()):backward(gy)
         local dx, dw, db = naive_gn_grads(px:tensor():to_flat(), shape, G, pw:tensor():to_flat(), gy:to_flat())
         approx(dx, px:grad(), 2e-4)
         approx(dw, pw:grad(), 2e-4)
         approx(db, pb:grad(), 2e-4)
      end
   end)

   it('gives the same bits with one thread and with two', function()
      local saved = fnn.get_num_threads()
      local x, gy, w = fnn.randn(8, 16, 32, 32) * 2, fnn.randn(8, 16, 32, 32), fnn.randn(16)
      local runs = {}
      for t = 1, 2 do
         fnn.set_num_threads(t)
         local px, pw = fnn.Param(x), fnn.Param(w)
         local y = fnn.group_norm(px:tensor(), 4, pw:tensor())
         y:backward(gy)
         runs[t] = {y:to_flat(), px:grad():to_flat(), pw:grad():to_flat()}
      end
      fnn.set_num_threads(saved)
      for k = 1, 3 do
         local a, c = runs[1][k], runs[2][k]
         local same = #a == #c
         for i = 1, #a do if a[i] ~= c[i] then same = false; break end end
         assert.is_true(same, ('result %d differs between 1 and 2 threads'):format(k))
      end
   end)

   it('instance_norm is group_norm with one group per channel', function()
      local x, w, b = fnn.randn(2, 3, 4, 5), fnn.randn(3), fnn.randn(3)
      approx((naive_gn(x:to_flat(), {2, 3, 4, 5}, 3, w:to_flat(), b:to_flat())), fnn.instance_norm(x, w, b), 1e-4)
      approx((naive_gn(x:to_flat(), {2, 3, 4, 5}, 3)), x:instance_norm(), 1e-4)
   end)

   it('refuses bad inputs, naming the op and the shapes, at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.group_norm(fnn.ones(2, 6, 3), 4) end)
      assert.equals(('spec/groupnorm_spec.lua:%d: group_norm: the 6 channels of input [2,6,3] do not split into '
                     .. '4 groups'):format(line), err)
      assert.matches('group_norm: bias %[4%] does not match the 6 channels of input %[2,6,3%] %(expected %[6%]%)',
                     err_of(function() local _ = fnn.group_norm(fnn.ones(2, 6, 3), 2, nil, fnn.ones(4)) end))
      assert.matches('group_norm: input %[6%] must be %[N, C, %*%]',
                     err_of(function() local _ = fnn.group_norm(fnn.ones(6), 2) end))
      assert.matches('group_norm: num_groups is 0, expected a positive integer',
                     err_of(function() local _ = fnn.group_norm(fnn.ones(2, 6), 0) end))
      assert.matches('group_norm: eps %-1 is negative',
                     err_of(function() local _ = fnn.group_norm(fnn.ones(2, 6), 2, nil, nil, {eps = -1}) end))
      assert.matches('instance_norm: input %[6%] must be %[N, C, %*%]',
                     err_of(function() local _ = fnn.instance_norm(fnn.ones(6)) end))
   end)
end)

describe('nn.GroupNorm', function()
   it('starts with weight ones, bias zeros and normalizes in training and eval alike', function()
      local m = nn.GroupNorm(2, 4)
      assert.equals(2, #m:parameters())
      approx({1, 1, 1, 1}, m.weight:tensor())
      approx({0, 0, 0, 0}, m.bias:tensor())
      assert.equals(0, #m:named_buffers())
      local x = fnn.randn(3, 4, 5)
      local want = (naive_gn(x:to_flat(), {3, 4, 5}, 2))
      approx(want, m(x), 1e-4)
      m:eval()
      approx(want, m(x), 1e-4)
   end)

   it('takes eps and affine = false, and trains its weight and bias', function()
      local m = nn.GroupNorm(3, 6, {eps = 0.1, affine = false})
      assert.equals(0, #m:parameters())
      local x = fnn.randn(2, 6, 4)
      approx((naive_gn(x:to_flat(), {2, 6, 4}, 3, nil, nil, 0.1)), m(x), 1e-4)
      local t = nn.GroupNorm(1, 2)
      t(fnn.randn(3, 2, 4)):sum():backward()
      approx({12, 12}, t.bias:grad(), 1e-6)
      assert.same({2}, t.weight:grad():shape())
      assert.equals('nn.GroupNorm(3, 6, eps=0.1, affine=false)', m:short_str())
   end)

   it('refuses a wrong channel count and bad sizes, at the caller\'s line', function()
      local m = nn.GroupNorm(2, 4)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = m(fnn.ones(2, 6, 3)) end)
      assert.equals(('spec/groupnorm_spec.lua:%d: GroupNorm(2, 4): input [2,6,3] has 6 channels in dim 2, '
                     .. 'expected 4'):format(line), err)
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = nn.GroupNorm(4, 6) end)
      assert.equals(('spec/groupnorm_spec.lua:%d: nn.GroupNorm: num_channels 6 is not divisible by num_groups 4')
                    :format(line), err)
      assert.matches('nn.GroupNorm: num_groups is 0, expected a positive integer',
                     err_of(function() local _ = nn.GroupNorm(0, 4) end))
      assert.matches('GroupNorm%(2, 4%): input %[4%] must be %[N, C, %*%]',
                     err_of(function() local _ = m(fnn.ones(4)) end))
   end)
end)

describe('nn.InstanceNorm', function()
   it('has PyTorch\'s defaults: no affine, no running stats; normalizes each sample\'s channel', function()
      local m = nn.InstanceNorm2d(3)
      assert.equals(0, #m:parameters())
      assert.equals(0, #m:named_buffers())
      local x = fnn.randn(2, 3, 4, 4) * 3 + 1
      local want = (naive_gn(x:to_flat(), {2, 3, 4, 4}, 3))
      approx(want, m(x), 1e-4)
      m:eval()
      approx(want, m(x), 1e-4)
      assert.equals('nn.InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=false, track_running_stats=false)',
                    m:short_str())
   end)

   it('takes one unbatched sample, and affine weights', function()
      local m = nn.InstanceNorm1d(3, {affine = true})
      assert.equals(2, #m:parameters())
      local x = fnn.randn(3, 7)
      local y = m(x)
      assert.same({3, 7}, y:shape())
      approx((naive_gn(x:to_flat(), {1, 3, 7}, 3)), y, 1e-4)
      local v = fnn.randn(2, 2, 3, 4, 5)
      approx((naive_gn(v:to_flat(), {2, 2, 60}, 2)), nn.InstanceNorm3d(2)(v), 1e-4)
      approx((naive_gn(v:to_flat(), {2, 2, 60}, 2)), nn.InstanceNorm(2)(v), 1e-4)
   end)

   it('with track_running_stats keeps the per-instance statistics\' batch means and uses them in eval', function()
      local m = nn.InstanceNorm1d(2, {track_running_stats = true})
      local x = fnn.randn(3, 2, 6) + 2
      m(x)
      local xs = x:to_flat()
      local rm, rv = {0, 0}, {1, 1}
      for c = 1, 2 do
         local ms, vs = 0, 0
         for n = 0, 2 do
            local s = 0
            for k = 1, 6 do s = s + xs[(n * 2 + c - 1) * 6 + k] end
            local mean = s / 6
            local v = 0
            for k = 1, 6 do v = v + (xs[(n * 2 + c - 1) * 6 + k] - mean) ^ 2 end
            ms, vs = ms + mean / 3, vs + v / 5 / 3
         end
         rm[c], rv[c] = 0.9 * rm[c] + 0.1 * ms, 0.9 * rv[c] + 0.1 * vs
      end
      approx(rm, m.running_mean, 1e-5)
      approx(rv, m.running_var, 1e-5)
      m:eval()
      local z = fnn.randn(2, 2, 6)
      local zs, want = z:to_flat(), {}
      for i = 1, #zs do
         local c = math.floor((i - 1) / 6) % 2 + 1
         want[i] = (zs[i] - rm[c]) / math.sqrt(rv[c] + 1e-5)
      end
      approx(want, m(z), 1e-4)
   end)

   it('refuses a wrong layout or channel count, at the caller\'s line', function()
      local m = nn.InstanceNorm2d(3)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = m(fnn.ones(2, 4, 5, 5)) end)
      assert.equals(('spec/groupnorm_spec.lua:%d: InstanceNorm2d(3): input [2,4,5,5] has 4 channels in dim 2, '
                     .. 'expected 3'):format(line), err)
      assert.matches('InstanceNorm2d%(3%): input %[2,3%] must be %[N, C, H, W%] or %[C, H, W%]',
                     err_of(function() local _ = m(fnn.ones(2, 3)) end))
      assert.matches('InstanceNorm1d%(4%): input %[3,5%] has 3 channels in dim 1, expected 4',
                     err_of(function() local _ = nn.InstanceNorm1d(4)(fnn.ones(3, 5)) end))
      assert.matches('InstanceNorm%(3%): input %[2,3%] must be %[N, C, %*%] %(3 or more dims%)',
                     err_of(function() local _ = nn.InstanceNorm(3)(fnn.ones(2, 3)) end))
   end)
end)
