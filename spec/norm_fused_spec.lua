-- batch_norm with {activation = 'relu'} (fnn.batch_norm and nn.BatchNorm1d/2d/3d) against the
-- unfused composition it replaces, batch_norm then x:relu(): the same values, dx, dw, db and batch
-- statistics (running stats for the layers), bit for bit (in the plain build), in training and eval, on 1-d ([N, C],
-- [N, C, L]), 2-d and 3-d inputs of odd sizes (C 3, planes 5x7, N 1 and 3) on both CPU layouts,
-- with and without affine tensors; the same bits at 1 and 2 threads; outputs that are exactly 0
-- after the normalization (constant channels, inputs at the running mean) get relu's gradient
-- there, 0; the layer exported to ONNX keeps its relu; and bad activations refused by name. The
-- values against naive loops, the gradcheck and the CUDA parity are spec/cases/norm.lua's.
local fnn = require 'fastnn'
local support = require 'support'
local err_of = support.err_of
local nn = fnn.nn

-- a and b hold the same values (tensors, or nil both): the same bits in the plain build; under the
-- sanitizers' instrumentation the compiler vectorizes and contracts the two kernels' sums
-- differently (seen: 2e-9 apart where the gradient's largest element is ~0.1), so there within 1e-6
-- of the tensor's largest magnitude
local EXACT = fnn.config().build:match("sanitize ''") ~= nil
local function same(a, b, what)
   assert.equals(a == nil, b == nil, what)
   if a == nil then return end
   assert.same(a:shape(), b:shape(), what)
   local x, y = a:to_flat(), b:to_flat()
   local scale = 0
   for i = 1, #x do scale = math.max(scale, math.abs(x[i])) end
   for i = 1, #x do
      local ok = x[i] == y[i]
      if not ok and not EXACT then ok = math.abs(x[i] - y[i]) <= 1e-6 * scale end
      if not ok then
         error(('%s: element %d: fused %.9g, unfused %.9g'):format(what, i, x[i], y[i]), 2)
      end
   end
end

-- one forward and backward of sum(y gy): fused, batch_norm with the activation; else batch_norm,
-- then relu. Returns y, dx, dw, db, batch mean, batch variance (nil where not given)
local function run(fused, x, w, b, gy, training, rm, rv)
   local px, pw, pb = fnn.Param(x), w and fnn.Param(w), b and fnn.Param(b)
   local y, bm, bv = fnn.batch_norm(px:tensor(), rm, rv, pw and pw:tensor(), pb and pb:tensor(),
                                    {training = training, activation = fused and 'relu' or nil})
   if not fused then y = y:relu() end
   y:backward(gy)
   return {y, px:grad(), pw and pw:grad(), pb and pb:grad(), bm, bv}
end
local NAMES = {'y', 'dx', 'dw', 'db', 'batch mean', 'batch var'}

local function compare(x, w, b, gy, training, rm, rv, what)
   local f = run(true, x, w, b, gy, training, rm, rv)
   local u = run(false, x, w, b, gy, training, rm, rv)
   for k = 1, 6 do same(f[k], u[k], ('%s: %s'):format(what, NAMES[k])) end
   return f
end

describe("batch_norm {activation = 'relu'}", function()
   it('is batch_norm then relu: values, gradients, batch statistics; 1-d, 2-d, 3-d, odd sizes, both layouts', function()
      fnn.manual_seed(31)
      local shapes = {{3, 3}, {1, 3, 5}, {3, 3, 5}, {1, 3, 40}, {3, 3, 5, 7}, {1, 3, 5, 7}, {3, 3, 2, 5, 7}}
      for _, shape in ipairs(shapes) do
         local C = shape[2]
         local x, gy = fnn.randn(shape) * 1.5 + 0.3, fnn.randn(shape)
         local w, b = fnn.rand(C) + 0.5, fnn.randn(C) * 0.5
         local rm, rv = fnn.randn(C) * 0.3, fnn.rand(C) + 0.5
         for _, training in ipairs{true, false} do
            -- N 1 and no spatial dims: one value per channel, which training refuses
            if not (training and shape[1] == 1 and #shape == 2) then
               for _, affine in ipairs{'wb', 'w', 'none'} do
                  local what = ('%s %s %s'):format(fnn.shape_str(x), training and 'training' or 'eval', affine)
                  local f = compare(x, affine ~= 'none' and w or nil, affine == 'wb' and b or nil, gy, training,
                                    rm, rv, what)
                  -- a real relu: some outputs clipped to 0, some kept
                  local y = f[1]:to_flat()
                  local zeros = 0
                  for i = 1, #y do if y[i] == 0 then zeros = zeros + 1 end end
                  assert.is_true(zeros > 0 and zeros < #y, what)
               end
            end
         end
      end
   end)

   it('takes a non-contiguous input as its contiguous copy', function()
      fnn.manual_seed(32)
      local x, gy, w = fnn.randn(4, 5, 3), fnn.randn(4, 3, 5), fnn.rand(3) + 0.5
      compare(x:transpose(2, 3), w, nil, gy, true, nil, nil, 'transposed')
   end)

   it('gives relu\'s gradient, 0, where the output is exactly 0 after the normalization', function()
      -- training: channel 2 constant (xhat exactly 0) with a zero bias, so its outputs are 0
      local N, C, S = 3, 3, 35
      fnn.manual_seed(33)
      local xs = fnn.randn(N, C, S):to_flat()
      for n = 0, N - 1 do for s = 1, S do xs[(n * C + 1) * S + s] = 0.7 end end
      local x = fnn.tensor(xs, {N, C, S})
      local gy = fnn.randn(N, C, S) + 0.5
      local w, b = fnn.tensor{1.5, 0.8, 1.2}, fnn.tensor{0.3, 0, -0.2}
      local f = compare(x, w, b, gy, true, nil, nil, 'constant channel')
      local y, dx, dw, db = f[1]:to_flat(), f[2]:to_flat(), f[3]:to_flat(), f[4]:to_flat()
      for n = 0, N - 1 do
         for s = 1, S do
            local i = (n * C + 1) * S + s
            assert.equals(0, y[i])
            assert.equals(0, dx[i])
         end
      end
      assert.equals(0, dw[2])
      assert.equals(0, db[2])   -- gy is not 0 there: a mask of y >= 0 would sum it
      assert.is_true(db[1] ~= 0 and db[3] ~= 0)

      -- eval: inputs at their channel's running mean, no bias: exactly 0 out, gradient 0 there
      local rm, rv = fnn.tensor{0.25, -0.5, 1.0}, fnn.tensor{0.5, 2.0, 1.5}
      local xe = fnn.randn(N, C, 5, 7):to_flat()
      local at = {}
      for i = 1, #xe, 3 do
         local c = math.floor((i - 1) / 35) % C + 1
         xe[i] = ({0.25, -0.5, 1.0})[c]
         at[#at + 1] = i
      end
      local ge = fnn.randn(N, C, 5, 7) + 3   -- positive: every masked gradient would show
      local fe = compare(fnn.tensor(xe, {N, C, 5, 7}), w, nil, ge, false, rm, rv, 'eval at the running mean')
      local ye, dxe = fe[1]:to_flat(), fe[2]:to_flat()
      for _, i in ipairs(at) do
         assert.equals(0, ye[i])
         assert.equals(0, dxe[i])
      end
   end)

   it('gives the same bits with one thread and with two', function()
      local saved = fnn.get_num_threads()
      for _, shape in ipairs{{8, 16, 32, 32}, {65536, 4}} do
         fnn.manual_seed(34)
         local x, gy = fnn.randn(shape) * 3 + 1, fnn.randn(shape)
         local w, b = fnn.randn(shape[2]), fnn.randn(shape[2])
         local runs = {}
         for t = 1, 2 do
            fnn.set_num_threads(t)
            local ok, r = pcall(run, true, x, w, b, gy, true)
            if not ok then fnn.set_num_threads(saved); error(r, 0) end
            runs[t] = r
         end
         fnn.set_num_threads(saved)
         local unfused = run(false, x, w, b, gy, true)
         for k = 1, 6 do
            same(runs[2][k], runs[1][k], ('%s, 2 threads against 1: %s'):format(fnn.shape_str(x), NAMES[k]))
            same(runs[1][k], unfused[k], ('%s: %s'):format(fnn.shape_str(x), NAMES[k]))   -- and the unfused pair's
         end
      end
   end)

   it('refuses an unknown activation by name, at the caller\'s line', function()
      local x = fnn.randn(4, 3)
      assert.matches("norm_fused_spec%.lua:%d+: fnn%.batch_norm: activation 'gelu' is not one of 'none', 'relu'",
                     err_of(function()   -- no tail call, so the error has this line
                        local y = fnn.batch_norm(x, nil, nil, nil, nil, {training = true, activation = 'gelu'})
                        return y
                     end))
      assert.matches('fnn%.batch_norm: activation is 1, expected a string',
                     err_of(function() return fnn.batch_norm(x, nil, nil, nil, nil, {activation = 1}) end))
      assert.matches("fnn%.batch_norm: unknown option 'activaton' %(options: activation",
                     err_of(function() return x:batch_norm(nil, nil, nil, nil, {activaton = 'relu'}) end))
      -- the C entry point checks its code too
      local T = require 'fastnn.tensor'
      local out = T.new()
      assert.is_true(T.C.fnn_batch_norm(out, nil, nil, x, nil, nil, nil, nil, 1, 1e-5, 7) ~= 0)
      assert.matches('batch_norm: activation 7 is not one of 0 %(none%), 1 %(relu%)', T.last_error())
   end)
end)

describe("nn.BatchNorm1d/2d/3d {activation = 'relu'}", function()
   local function layer(d, C, opts) return nn['BatchNorm' .. d .. 'd'](C, opts) end

   it('trains and evaluates as the layer then relu: outputs, gradients, running stats', function()
      fnn.manual_seed(35)
      for _, c in ipairs{{1, {3, 3}}, {1, {3, 3, 5}}, {2, {3, 3, 5, 7}}, {2, {1, 3, 5, 7}}, {3, {3, 3, 2, 5, 7}}} do
         local d, shape = c[1], c[2]
         for _, opts in ipairs{{}, {affine = false}, {momentum = false}} do
            local fo = {activation = 'relu'}
            for k, v in pairs(opts) do fo[k] = v end
            local fused, plain = layer(d, 3, fo), layer(d, 3, opts)
            local what = ('BatchNorm%dd %s'):format(d, fnn.shape_str(fnn.zeros(shape)))
            for step = 1, 2 do
               local x, gy = fnn.randn(shape) * 2 + 0.5, fnn.randn(shape)
               local px = fnn.Param(x)
               local yf = fused(px:tensor())
               yf:backward(gy)
               local qx = fnn.Param(x)
               local yp = plain(qx:tensor()):relu()
               yp:backward(gy)
               same(yf, yp, what .. ' step ' .. step .. ' y')
               same(px:grad(), qx:grad(), what .. ' dx')
               if fused.weight then
                  same(fused.weight:grad(), plain.weight:grad(), what .. ' dw')
                  same(fused.bias:grad(), plain.bias:grad(), what .. ' db')
               end
               same(fused.running_mean, plain.running_mean, what .. ' running_mean')
               same(fused.running_var, plain.running_var, what .. ' running_var')
               fused:zero_grad(); plain:zero_grad()
            end
            fused:eval(); plain:eval()
            local x = fnn.randn(shape)
            same(fused(x), plain(x):relu(), what .. ' eval')
         end
      end
   end)

   it('exports to ONNX as BatchNormalization then Relu (eval), which loads back to the same outputs', function()
      fnn.manual_seed(36)
      local m = nn.Sequential(nn.Conv2d(2, 3, 3, {padding = 1}), nn.BatchNorm2d(3, {activation = 'relu'}))
      for _ = 1, 2 do m(fnn.randn(4, 2, 5, 7)) end   -- running statistics away from 0 and 1
      m:eval()
      local path = os.tmpname()
      fnn.onnx.export(m, fnn.randn(2, 2, 5, 7), path)
      local loaded = fnn.onnx.load(path)
      os.remove(path)
      local x = fnn.randn(3, 2, 5, 7)
      local want, got = m(x), loaded(x)
      assert.is_true((want - got):abs():max():item() <= 1e-6)
      assert.is_true(got:min():item() == 0 and got:max():item() > 0)   -- the relu is in the file
   end)

   it('shows the activation when it has one, and takes none by name', function()
      assert.equals('nn.BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true, '
                    .. "activation='relu')", tostring(nn.BatchNorm2d(4, {activation = 'relu'})))
      assert.equals('nn.BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)',
                    tostring(nn.BatchNorm1d(4, {activation = 'none'})))
      assert.is_nil(nn.BatchNorm3d(4).activation)
   end)

   it('refuses an unknown activation by name, and the instance norms take none', function()
      for d = 1, 3 do
         local want = "norm_fused_spec%%.lua:%%d+: nn%%.BatchNorm%dd: activation 'gelu' is not one of 'none', 'relu'"
         assert.matches(want:format(d),
                        err_of(function() local m = layer(d, 3, {activation = 'gelu'}); return m end))
      end
      assert.matches("nn%.InstanceNorm2d: unknown option 'activation'",
                     err_of(function() return nn.InstanceNorm2d(3, {activation = 'relu'}) end))
      local m = nn.BatchNorm2d(3)
      m.activation = 'tanh'   -- set after construction: refused when it runs
      assert.matches("BatchNorm2d%(3%): activation is 'tanh', expected 'relu' or nil",
                     err_of(function() return m(fnn.randn(2, 3, 4, 4)) end))
   end)
end)

describe('fnn.add_layer_norm', function()
   -- s, y and the gradients of x, r, w, b from sum(y gy) + sum(s gs): fused, fnn.add_layer_norm; else
   -- x + r, then fnn.layer_norm
   local function run_add(fused, x, r, w, b, gy, gs, eps)
      local px, pr, pw, pb = fnn.Param(x), fnn.Param(r), w and fnn.Param(w), b and fnn.Param(b)
      local wt, bt = pw and pw:tensor(), pb and pb:tensor()
      local s, y
      if fused then
         s, y = fnn.add_layer_norm(px:tensor(), pr:tensor(), wt, bt, {eps = eps})
      else
         s = px:tensor() + pr:tensor()
         y = fnn.layer_norm(s, wt, bt, {eps = eps})
      end
      ;(fnn.sum(y * gy) + fnn.sum(s * gs)):backward()
      return {s, y, px:grad(), pr:grad(), pw and pw:grad(), pb and pb:grad()}
   end
   local ADD_NAMES = {'s', 'y', 'dx', 'dr', 'dw', 'db'}
   local function compare_add(x, r, w, b, what, eps)
      local gy, gs = fnn.randn(x:shape()), fnn.randn(x:shape())
      local f, u = run_add(true, x, r, w, b, gy, gs, eps), run_add(false, x, r, w, b, gy, gs, eps)
      for k = 1, 6 do same(f[k], u[k], ('%s: %s'):format(what, ADD_NAMES[k])) end
   end

   it('is x + r then layer_norm: s, y and every gradient, bit for bit', function()
      fnn.manual_seed(41)
      for _, c in ipairs{{{3, 5}, {5}}, {{1, 7}, {7}}, {{2, 3, 7}, {7}}, {{2, 3, 7}, {3, 7}}, {{4, 300}, {300}}} do
         local shape, ws = c[1], c[2]
         local x, r = fnn.randn(shape) * 2 + 1, fnn.randn(shape)
         local w, b = fnn.rand(ws) + 0.5, fnn.randn(ws)
         local what = fnn.shape_str(x) .. ' over ' .. fnn.shape_str(w)
         compare_add(x, r, w, b, what)
         compare_add(x, r, w, nil, what .. ', weight only', 1e-3)
         if #ws == 1 then compare_add(x, r, nil, nil, what .. ', no affine') end
      end
      -- non-contiguous input and residual
      compare_add(fnn.randn(5, 4):t(), fnn.randn(4, 5), fnn.rand(5) + 0.5, nil, 'transposed x')
      compare_add(fnn.randn(4, 5), fnn.randn(5, 4):t(), nil, fnn.randn(5), 'transposed r')
   end)

   it('keeps no graph when nothing needs one, and one for w alone', function()
      local x, r = fnn.randn(2, 6), fnn.randn(2, 6)
      local s, y = fnn.add_layer_norm(x, r)
      same(s, x + r, 'no grad: s')
      same(y, fnn.layer_norm(x + r), 'no grad: y')
      local pw = fnn.Param(fnn.rand(6) + 0.5)
      local _, yw = fnn.add_layer_norm(x, r, pw:tensor())
      yw:sum():backward()
      local pw2 = fnn.Param(pw:tensor())
      fnn.layer_norm(x + r, pw2:tensor()):sum():backward()
      same(pw:grad(), pw2:grad(), 'dw alone')
   end)

   it('gives the same bits with one thread and with two', function()
      local saved = fnn.get_num_threads()
      fnn.manual_seed(42)
      local x, r, w, b = fnn.randn(512, 512), fnn.randn(512, 512), fnn.rand(512) + 0.5, fnn.randn(512)
      local gy, gs = fnn.randn(512, 512), fnn.randn(512, 512)
      local runs = {}
      for t = 1, 2 do
         fnn.set_num_threads(t)
         local ok, res = pcall(run_add, true, x, r, w, b, gy, gs)
         if not ok then fnn.set_num_threads(saved); error(res, 0) end
         runs[t] = res
      end
      fnn.set_num_threads(saved)
      for k = 1, 6 do same(runs[2][k], runs[1][k], '2 threads against 1: ' .. ADD_NAMES[k]) end
   end)

   it('refuses a residual of another shape, a bad eps, an unknown option, by name at the caller\'s line', function()
      local x = fnn.randn(2, 4)
      assert.matches('norm_fused_spec%.lua:%d+: add_layer_norm: residual %[4%] does not have input %[2,4%]\'s shape',
                     err_of(function() local s, y = fnn.add_layer_norm(x, fnn.randn(4)); return s, y end))
      assert.matches('add_layer_norm: eps %-1 is negative %(input %[2,4%]%)',
                     err_of(function() local s, y = fnn.add_layer_norm(x, x, nil, nil, {eps = -1}); return s, y end))
      assert.matches("fnn%.add_layer_norm: unknown option 'epsilon' %(options: eps%)",
                     err_of(function() local s, y = x:add_layer_norm(x, nil, nil, {epsilon = 1}); return s, y end))
      assert.matches('add_layer_norm: normalized size 3 is not the product of trailing dims of input %[2,4%]',
                     err_of(function() local s, y = fnn.add_layer_norm(x, x, fnn.ones(3)); return s, y end))
   end)
end)
