-- batch_norm and nn.BatchNorm1d/2d/3d against the formulas computed here in Lua doubles:
-- values on every layout ([N, C], [N, C, L] narrow and wide, [N, C, H, W], [N, C, D, H, W]) in
-- training and eval mode, with and without affine tensors, on non-contiguous input; the batch
-- mean and unbiased variance handed back; gradients against the textbook rules (training and
-- eval); results that do not depend on the thread count; the layers' running statistics after
-- two steps (momentum 0.1 and a cumulative average), train/eval behaviour, buffers and
-- printing; and the errors, naming the op or layer and the shapes, at the caller's line.
local fnn = require 'fastnn'
local support = require 'support'
local approx, err_of = support.approx, support.err_of
local nn = fnn.nn

-- x flat in row-major order over shape {N, C, ...}: per channel (mean, biased var, count)
local function channel_stats(xs, shape)
   local N, C = shape[1], shape[2]
   local S = 1
   for d = 3, #shape do S = S * shape[d] end
   local mean, var = {}, {}
   for c = 1, C do
      local s = 0
      for n = 0, N - 1 do
         for k = 1, S do s = s + xs[(n * C + c - 1) * S + k] end
      end
      mean[c] = s / (N * S)
      local v = 0
      for n = 0, N - 1 do
         for k = 1, S do v = v + (xs[(n * C + c - 1) * S + k] - mean[c]) ^ 2 end
      end
      var[c] = v / (N * S)
   end
   return mean, var, N * S, S
end

-- y = (x - mean_c) / sqrt(var_c + eps) * w_c + b_c over the flat xs
local function naive_bn(xs, shape, mean, var, w, b, eps)
   eps = eps or 1e-5
   local C, S = shape[2], #xs / (shape[1] * shape[2])
   local out = {}
   for i = 1, #xs do
      local c = math.floor((i - 1) / S) % C + 1
      local y = (xs[i] - mean[c]) / math.sqrt(var[c] + eps)
      if w then y = y * w[c] end
      if b then y = y + b[c] end
      out[i] = y
   end
   return out
end

-- gradients of sum(y * gy): training uses the batch statistics' full rule, eval the affine rule
local function naive_bn_grads(xs, shape, w, gy, training, rm, rv, eps)
   eps = eps or 1e-5
   local C = shape[2]
   local mean, var, M, S = channel_stats(xs, shape)
   if not training then mean, var = rm, rv end
   local sg, sgx, dw, db = {}, {}, {}, {}
   for c = 1, C do sg[c], sgx[c] = 0, 0 end
   local function chan(i) return math.floor((i - 1) / S) % C + 1 end
   for i = 1, #xs do
      local c = chan(i)
      local xhat = (xs[i] - mean[c]) / math.sqrt(var[c] + eps)
      local d = gy[i] * (w and w[c] or 1)   -- dxhat
      sg[c], sgx[c] = sg[c] + d, sgx[c] + d * xhat
      dw[c], db[c] = (dw[c] or 0) + gy[i] * xhat, (db[c] or 0) + gy[i]
   end
   local dx = {}
   for i = 1, #xs do
      local c = chan(i)
      local r = 1 / math.sqrt(var[c] + eps)
      local xhat = (xs[i] - mean[c]) * r
      local d = gy[i] * (w and w[c] or 1)
      if training then dx[i] = r * (d - sg[c] / M - xhat * sgx[c] / M)
      else dx[i] = r * d end
   end
   return dx, dw, db
end

local function unbiased(var, M)
   local out = {}
   for c = 1, #var do out[c] = var[c] * M / (M - 1) end
   return out
end

local LAYOUTS = {
   {6, 3},            -- [N, C]: blocks of rows
   {3, 4, 5},         -- [N, C, L] narrow (L < 32)
   {2, 3, 40},        -- [N, C, L] wide: by channel
   {2, 3, 6, 7},      -- [N, C, H, W]
   {2, 2, 3, 4, 5},   -- [N, C, D, H, W]
}

describe('batch_norm', function()
   it('normalizes with the batch statistics in training, on every layout', function()
      for _, shape in ipairs(LAYOUTS) do
         local C = shape[2]
         local x, w, b = fnn.randn(shape) * 2 + 0.5, fnn.randn(C), fnn.randn(C)
         local y, bm, bv = fnn.batch_norm(x, nil, nil, w, b, {training = true})
         assert.same(shape, y:shape())
         local xs = x:to_flat()
         local mean, var, M = channel_stats(xs, shape)
         approx(naive_bn(xs, shape, mean, var, w:to_flat(), b:to_flat()), y, 1e-4)
         approx(mean, bm, 1e-5)
         approx(unbiased(var, M), bv, 1e-5)
      end
   end)

   it('normalizes with the running statistics in eval, on every layout', function()
      for _, shape in ipairs(LAYOUTS) do
         local C = shape[2]
         local x, w, b = fnn.randn(shape), fnn.randn(C), fnn.randn(C)
         local rm, rv = fnn.randn(C), fnn.rand(C) + 0.5
         local y, extra = fnn.batch_norm(x, rm, rv, w, b)
         assert.is_nil(extra)
         approx(naive_bn(x:to_flat(), shape, rm:to_flat(), rv:to_flat(), w:to_flat(), b:to_flat()), y, 1e-4)
         -- the running stats are ignored in training
         local yt = fnn.batch_norm(x, rm, rv, w, b, {training = true})
         local mean, var = channel_stats(x:to_flat(), shape)
         approx(naive_bn(x:to_flat(), shape, mean, var, w:to_flat(), b:to_flat()), yt, 1e-4)
      end
   end)

   it('works without weight, without bias, and honours eps', function()
      local shape = {4, 3, 5}
      local x, w, b = fnn.randn(shape), fnn.randn(3), fnn.randn(3)
      local xs = x:to_flat()
      local mean, var = channel_stats(xs, shape)
      approx(naive_bn(xs, shape, mean, var, nil, nil), fnn.batch_norm(x, nil, nil, nil, nil, {training = true}), 1e-4)
      approx(naive_bn(xs, shape, mean, var, w:to_flat(), nil), fnn.batch_norm(x, nil, nil, w, nil, {training = true}), 1e-4)
      approx(naive_bn(xs, shape, mean, var, nil, b:to_flat()), x:batch_norm(nil, nil, nil, b, {training = true}), 1e-4)
      approx(naive_bn(xs, shape, mean, var, nil, nil, 0.5),
             fnn.batch_norm(x, nil, nil, nil, nil, {training = true, eps = 0.5}), 1e-5)
   end)

   it('reads a non-contiguous input', function()
      local base = fnn.randn(5, 3, 8, 6)
      local x = base:transpose(3, 4)   -- [5, 3, 6, 8]
      local xs = x:contiguous():to_flat()
      local mean, var = channel_stats(xs, {5, 3, 6, 8})
      approx(naive_bn(xs, {5, 3, 6, 8}, mean, var), fnn.batch_norm(x, nil, nil, nil, nil, {training = true}), 1e-4)
   end)

   it('is stable for a large mean', function()
      local shape = {4, 2, 50}
      local x = fnn.randn(shape) + 1e4
      local xs = x:to_flat()
      local mean, var = channel_stats(xs, shape)
      local _, bm, bv = fnn.batch_norm(x, nil, nil, nil, nil, {training = true})
      approx(mean, bm, 1e-6)
      approx(unbiased(var, 200), bv, 2e-3)
      approx(naive_bn(xs, shape, mean, var), fnn.batch_norm(x, nil, nil, nil, nil, {training = true}), 2e-2)
   end)

   it('has gradients matching the textbook rules in training and eval, on the narrow and wide layouts', function()
      for _, shape in ipairs{{7, 4}, {3, 4, 9}, {3, 4, 8, 8}} do
         for _, training in ipairs{true, false} do
            local C = shape[2]
            local px, pw, pb = fnn.Param(fnn.randn(shape)), fnn.Param(fnn.randn(C)), fnn.Param(fnn.randn(C))
            local rm, rv = fnn.randn(C), fnn.rand(C) + 0.5
            local gy = fnn.randn(shape)
            local y = fnn.batch_norm(px:tensor(), rm, rv, pw:tensor(), pb:tensor(), {training = training})
            y:backward(gy)
            local dx, dw, db = naive_bn_grads(px:tensor():to_flat(), shape, pw:tensor():to_flat(), gy:to_flat(),
                                              training, rm:to_flat(), rv:to_flat())
            approx(dx, px:grad(), 2e-4)
            approx(dw, pw:grad(), 2e-4)
            approx(db, pb:grad(), 2e-4)
         end
      end
   end)

   it('gives the same bits with one thread and with two', function()
      local saved = fnn.get_num_threads()
      for _, shape in ipairs{{8, 16, 32, 32}, {65536, 4}} do
         local x, gy = fnn.randn(shape) * 3 + 1, fnn.randn(shape)
         local w, b = fnn.randn(shape[2]), fnn.randn(shape[2])
         local runs = {}
         for t = 1, 2 do
            fnn.set_num_threads(t)
            local px, pw = fnn.Param(x), fnn.Param(w)
            local y, bm, bv = fnn.batch_norm(px:tensor(), nil, nil, pw:tensor(), b, {training = true})
            y:backward(gy)
            runs[t] = {y:to_flat(), bm:to_flat(), bv:to_flat(), px:grad():to_flat(), pw:grad():to_flat()}
         end
         fnn.set_num_threads(saved)
         for k = 1, 5 do
            local a, c = runs[1][k], runs[2][k]
            assert.equals(#a, #c)
            local same = true
            for i = 1, #a do if a[i] ~= c[i] then same = false; break end end
            assert.is_true(same, ('result %d of %s differs between 1 and 2 threads'):format(k, fnn.shape_str(x)))
         end
         -- and they are right: the batch statistics against the formulas
         local mean, var, M = channel_stats(x:to_flat(), shape)
         approx(mean, runs[1][2], 1e-5)
         approx(unbiased(var, M), runs[1][3], 1e-4)
      end
   end)

   it('refuses bad inputs, naming the op and the shapes, at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = fnn.batch_norm(fnn.ones(2, 3, 4), nil, nil, fnn.ones(4)) end)
      assert.equals(('spec/batchnorm_spec.lua:%d: batch_norm: weight [4] does not match the 3 channels of '
                     .. 'input [2,3,4] (expected [3])'):format(line), err)
      assert.matches('batch_norm: running_var %[2%] does not match the 3 channels of input %[2,3%]',
                     err_of(function() local _ = fnn.batch_norm(fnn.ones(2, 3), fnn.zeros(3), fnn.ones(2)) end))
      assert.matches('batch_norm: eval mode needs running_mean and running_var %(input %[2,3%]%)',
                     err_of(function() local _ = fnn.batch_norm(fnn.ones(2, 3)) end))
      assert.matches('batch_norm: expected more than 1 value per channel when training, got input %[1,3%]',
                     err_of(function() local _ = fnn.batch_norm(fnn.ones(1, 3), nil, nil, nil, nil, {training = true}) end))
      assert.matches('batch_norm: input %[5%] must be %[N, C%] or %[N, C, %*%]',
                     err_of(function() local _ = fnn.batch_norm(fnn.ones(5), fnn.zeros(5), fnn.ones(5)) end))
      assert.matches('batch_norm: eps %-1 is negative',
                     err_of(function() local _ = fnn.batch_norm(fnn.ones(2, 3), nil, nil, nil, nil, {training = true, eps = -1}) end))
      assert.matches('batch_norm: expected a float32 tensor, got an int64 tensor',
                     err_of(function() local _ = fnn.batch_norm(fnn.ones(2, 3):long(), nil, nil, nil, nil, {training = true}) end))
      assert.matches('batch_norm: weight is a string, expected a tensor',
                     err_of(function() local _ = fnn.batch_norm(fnn.ones(2, 3), nil, nil, 'w') end))
   end)
end)

describe('nn.BatchNorm2d and friends', function()
   it('start with weight ones, bias zeros, running_mean zeros, running_var ones, as buffers', function()
      local m = nn.BatchNorm2d(3)
      local names = {}
      for i, pair in ipairs(m:named_parameters()) do names[i] = pair[1] end
      assert.same({'weight', 'bias'}, names)
      approx({1, 1, 1}, m.weight:tensor())
      approx({0, 0, 0}, m.bias:tensor())
      local bufs = {}
      for i, pair in ipairs(m:named_buffers()) do bufs[i] = pair[1] end
      assert.same({'running_mean', 'running_var', 'num_batches_tracked'}, bufs)
      approx({0, 0, 0}, m.running_mean)
      approx({1, 1, 1}, m.running_var)
      assert.equals('int64', m.num_batches_tracked:dtype())
      assert.equals(0, m.num_batches_tracked:item())
   end)

   it('normalize with batch statistics in training and update the running stats (momentum 0.1)', function()
      local m = nn.BatchNorm2d(3)
      local shape = {4, 3, 5, 5}
      local rm, rv = {0, 0, 0}, {1, 1, 1}
      for _ = 1, 2 do
         local x = fnn.randn(shape) * 2 + 1
         local xs = x:to_flat()
         local y = m(x)
         local mean, var, M = channel_stats(xs, shape)
         approx(naive_bn(xs, shape, mean, var), y, 1e-4)
         for c = 1, 3 do
            rm[c] = 0.9 * rm[c] + 0.1 * mean[c]
            rv[c] = 0.9 * rv[c] + 0.1 * var[c] * M / (M - 1)
         end
      end
      approx(rm, m.running_mean, 1e-5)
      approx(rv, m.running_var, 1e-5)
      assert.equals(2, m.num_batches_tracked:item())
      -- eval normalizes with them and leaves them alone
      m:eval()
      local x = fnn.randn(shape)
      approx(naive_bn(x:to_flat(), shape, rm, rv), m(x), 1e-4)
      approx(rm, m.running_mean, 1e-5)
      assert.equals(2, m.num_batches_tracked:item())
      -- the buffers listed are the new tensors
      assert.equals(m.running_mean, m:named_buffers()[1][2])
   end)

   it('keep a cumulative average when momentum is false (PyTorch\'s None)', function()
      local m = nn.BatchNorm1d(4, {momentum = false})
      local x1, x2 = fnn.randn(8, 4) + 2, fnn.randn(8, 4) - 1
      m(x1)
      m(x2)
      local m1, v1 = channel_stats(x1:to_flat(), {8, 4})
      local m2, v2 = channel_stats(x2:to_flat(), {8, 4})
      local rm, rv = {}, {}
      for c = 1, 4 do
         rm[c] = (m1[c] + m2[c]) / 2   -- 1/1 of the first batch, then 1/2 of the second
         rv[c] = (v1[c] + v2[c]) / 2 * 8 / 7
      end
      approx(rm, m.running_mean, 1e-5)
      approx(rv, m.running_var, 1e-5)
      -- and so does setting momentum to nil on the layer, as in PyTorch
      local m3 = nn.BatchNorm1d(4)
      m3.momentum = nil
      m3(x1)
      m3(x2)
      approx(rm, m3.running_mean, 1e-5)
   end)

   it('without affine have no parameters; without running stats use batch stats in eval too', function()
      local m = nn.BatchNorm3d(2, {affine = false, eps = 1e-3})
      assert.equals(0, #m:parameters())
      local shape = {2, 2, 3, 3, 4}
      local x = fnn.randn(shape) * 3
      local mean, var = channel_stats(x:to_flat(), shape)
      approx(naive_bn(x:to_flat(), shape, mean, var, nil, nil, 1e-3), m(x), 1e-4)
      local u = nn.BatchNorm2d(3, {track_running_stats = false})
      assert.equals(0, #u:named_buffers())
      u:eval()
      local x2 = fnn.randn(2, 3, 4, 4) + 3
      local m2, v2 = channel_stats(x2:to_flat(), {2, 3, 4, 4})
      approx(naive_bn(x2:to_flat(), {2, 3, 4, 4}, m2, v2), u(x2), 1e-4)
   end)

   it('train their weight and bias in training and in eval', function()
      for _, training in ipairs{true, false} do
         local m = nn.BatchNorm1d(3)
         if not training then m:eval() end
         local x, gy = fnn.randn(5, 3, 4), fnn.randn(5, 3, 4)
         m(x):backward(gy)
         local dx, dw, db = naive_bn_grads(x:to_flat(), {5, 3, 4}, {1, 1, 1}, gy:to_flat(), training,
                                           {0, 0, 0}, {1, 1, 1})
         assert.is_not_nil(dx)
         approx(dw, m.weight:grad(), 1e-4)
         approx(db, m.bias:grad(), 1e-4)
      end
   end)

   it('print one line for the module tree', function()
      assert.equals('nn.BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)',
                    nn.BatchNorm2d(64):short_str())
      assert.equals('nn.BatchNorm1d(8, eps=0.001, momentum=nil (cumulative), affine=false, track_running_stats=true)',
                    nn.BatchNorm1d(8, {eps = 1e-3, momentum = false, affine = false}):short_str())
      local tree = tostring(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)))
      assert.truthy(tree:find('nn.BatchNorm2d(4, eps=1e-05', 1, true))
   end)

   it('refuse a wrong layout or channel count, naming the layer and the shape, at the caller\'s line', function()
      local m = nn.BatchNorm2d(4)
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = m(fnn.ones(2, 3, 5, 5)) end)
      assert.equals(('spec/batchnorm_spec.lua:%d: BatchNorm2d(4): input [2,3,5,5] has 3 channels in dim 2, '
                     .. 'expected 4'):format(line), err)
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = m:forward(fnn.ones(2, 4, 5)) end)
      assert.equals(('spec/batchnorm_spec.lua:%d: BatchNorm2d(4): input [2,4,5] must be [N, C, H, W]'):format(line), err)
      assert.matches('BatchNorm1d%(3%): input %[2,3,4,4%] must be %[N, C%] or %[N, C, L%]',
                     err_of(function() local _ = nn.BatchNorm1d(3)(fnn.ones(2, 3, 4, 4)) end))
      assert.matches('BatchNorm3d%(3%): input %[2,3,4,4%] must be %[N, C, D, H, W%]',
                     err_of(function() local _ = nn.BatchNorm3d(3)(fnn.ones(2, 3, 4, 4)) end))
      assert.matches('BatchNorm1d%(3%): input is a string, expected a tensor',
                     err_of(function() local _ = nn.BatchNorm1d(3)('x') end))
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = nn.BatchNorm1d(3)(fnn.ones(1, 3)) end)
      assert.equals(('spec/batchnorm_spec.lua:%d: batch_norm: expected more than 1 value per channel when '
                     .. 'training, got input [1,3]'):format(line), err)
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = nn.BatchNorm2d(0) end)
      assert.equals(('spec/batchnorm_spec.lua:%d: nn.BatchNorm2d: num_features is 0, expected a positive integer')
                    :format(line), err)
      assert.matches('nn.BatchNorm2d: momentum is 2, expected a number in %[0, 1%] or false',
                     err_of(function() local _ = nn.BatchNorm2d(3, {momentum = 2}) end))
      assert.matches('nn.BatchNorm2d: eps is %-1, expected a non%-negative number',
                     err_of(function() local _ = nn.BatchNorm2d(3, {eps = -1}) end))
   end)
end)
