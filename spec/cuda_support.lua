-- spec/cuda_support.lua: what the CUDA parity specs (spec/cuda_parity*_spec.lua) share: the GPU
-- (or why there is none), assert_close, case/skip (each case says "skipped: no CUDA device" without a
-- GPU, and checks the reason), parity (forward) and parity_grad (forward and every input gradient),
-- the tolerance pairs, and deterministic inputs. See spec/cuda_parity_spec.lua for the tolerances.
--   local S = require 'cuda_support'; S.parity_grad(label, {x, w}, function(x, w) ... end, atol, rtol, gtol)
local ffi = require 'ffi'
local assert = require 'luassert'   -- busted's assert and it live in spec environments, not in _G
local fnn = require 'fastnn'
local C = require 'fastnn.C'
local Device, Param = fnn.Device, fnn.Param

local gpu, why = Device.cuda(0)
local built = C.fnn_cuda_built() == 1
-- the reason we expect when there is no GPU (a Lua pattern)
local reason = built and 'cuda:0 is not available: no CUDA device found'
                      or 'cuda:0 is not available: this build has no CUDA backend; rebuild with %-DFASTNN_CUDA=ON'
local CUDA0 = 256   -- FNN_DEVICE_CUDA * 256 + ordinal 0, for the raw C entries

local SIZES = {1, 127, 128, 129, 1023, 1024, 1025}

local function uniform(shape, lo, hi) return fnn.rand(shape) * (hi - lo) + lo end

-- got (a CPU tensor from the GPU) against want (the CPU result), |g - w| <= atol + rtol |w|;
-- nan must meet nan, an infinity the same infinity
local function assert_close(want, got, atol, rtol, label)
   assert.equals(want:shape_str(), got:shape_str(), label .. ': shapes differ')
   local w, g = want:to_flat(), got:to_flat()
   for i = 1, #w do
      local ok = (w[i] ~= w[i] and g[i] ~= g[i]) or g[i] == w[i] or math.abs(g[i] - w[i]) <= atol + rtol * math.abs(w[i])
      if not ok then error(('%s: element %d: cpu %.9g, cuda %.9g'):format(label, i, w[i], g[i]), 2) end
   end
end

-- it() that remembers the case's name, so a skipped case can say which it is
local current = '?'
local function case(desc, f) getfenv(2).it(desc, function() current = desc; return f() end) end

-- without a GPU: say so for this case, and check the reason is given both by Device.cuda and
-- by moving each input
local function skip(label, inputs)
   print(('%s: skipped: no CUDA device'):format(current))
   assert.is_nil(gpu)
   assert.is_truthy(why:find(reason), ('%s: unexpected reason: %s'):format(label, tostring(why)))
   for _, x in ipairs(inputs) do
      assert.error_matches(function() return x:to('cuda:0') end, 'to: ' .. reason)
      assert.equals('cpu', tostring(x:device()))
   end
end

local function to_gpu(inputs)
   local out = {}
   for i, x in ipairs(inputs) do
      out[i] = x:to(gpu)
      assert.equals(gpu, out[i]:device())
   end
   return out
end

-- run compute on CPU inputs and on their GPU copies and compare the results
local function parity(label, inputs, compute, atol, rtol)
   if not gpu then return skip(label, inputs) end
   local want = compute(unpack(inputs))
   local got = compute(unpack(to_gpu(inputs)))
   assert.equals(gpu, got:device(), label .. ': result left the GPU')
   assert_close(want, got:to('cpu'), atol, rtol, label)
end

-- fixed, distinct weights for backward (as fnn.gradcheck's), on the output's device
local function weights(y)
   local w = {}
   for i = 1, y:numel() do w[i] = 0.5 + ((i * 7919) % 101) / 101 end
   return fnn.tensor(w, y:shape()):to(y:device())
end

-- forward and backward: y = fn(inputs as Params), y:backward(weights); compare y and every
-- input's gradient (gtol: the gradients' tolerance factor over the forward's)
local function parity_grad(label, inputs, fn, atol, rtol, gtol)
   if not gpu then return skip(label, inputs) end
   gtol = gtol or 2
   local function run(xs)
      local ps, ts = {}, {}
      for i, x in ipairs(xs) do
         ps[i] = Param(x)
         ts[i] = ps[i]:tensor()
      end
      local y = fn(unpack(ts))
      y:backward(weights(y))
      local grads = {}
      for i, p in ipairs(ps) do grads[i] = p:grad() or false end
      return y, grads
   end
   local want, wgrads = run(inputs)
   local got, ggrads = run(to_gpu(inputs))
   assert.equals(gpu, got:device(), label .. ': result left the GPU')
   assert_close(want, got:to('cpu'), atol, rtol, label)
   for i = 1, #inputs do
      assert.equals(not wgrads[i], not ggrads[i], ('%s: input %d: gradient on one side only'):format(label, i))
      if wgrads[i] then
         assert.equals(gpu, ggrads[i]:device(), label .. ': gradient left the GPU')
         assert_close(wgrads[i], ggrads[i]:to('cpu'), atol * gtol, rtol * gtol, ('%s: d input %d'):format(label, i))
      end
   end
end

local EXACT = {0, 1e-6}
local FAST = {1e-6, 2e-5}
local TRIG = {2e-6, 2e-5}
local POW = {1e-6, 1e-4}

-- class ids 1..C (deterministic), as int64; ignore: every 7th id replaced by that value
local function class_ids(n, classes, ignore)
   local v = {}
   for i = 1, n do v[i] = (ignore and i % 7 == 0) and ignore or (i * 37 + 11) % classes + 1 end
   return fnn.tensor(v, {n}):long()
end
-- ids 1..size, repeats included (deterministic), int64, of the given shape
local some_ids = require('naive_nd').some_ids

local function ok(rc) assert.equals(0, rc, rc ~= 0 and ffi.string(C.fnn_last_error()) or nil) end

-- a training run's steps on dev: loss_of() computed there, backward, opt's step; the losses as numbers
local function train_steps(dev, steps, opt, loss_of)
   local losses = {}
   for step = 1, steps do
      local loss = loss_of()
      assert.equals(dev, loss:device())
      opt:zero_grad()
      loss:backward()
      opt:step()
      losses[step] = loss:to('cpu'):item()
   end
   return losses
end

local ATOMIC = {1e-6, 1e-5}

return {gpu = gpu, why = why, built = built, reason = reason, CUDA0 = CUDA0, SIZES = SIZES,
        uniform = uniform, assert_close = assert_close, case = case, skip = skip, to_gpu = to_gpu,
        parity = parity, weights = weights, parity_grad = parity_grad, class_ids = class_ids,
        some_ids = some_ids, ok = ok, train_steps = train_steps, EXACT = EXACT, FAST = FAST, TRIG = TRIG, POW = POW,
        ATOMIC = ATOMIC}
