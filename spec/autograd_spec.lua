-- The autograd engine: fan-out, broadcasting, frozen params, no_grad,
-- anomaly detection, freeing the graph, and its errors.
local fnn = require 'fastnn'
local Param = fnn.Param
local nn = fnn.nn

local approx = require('support').approx

describe('backward', function()
   it('accumulates a tensor used several times (fan-out)', function()
      local p = Param(fnn.tensor{1, 2, 3})
      local x = p:tensor()
      local y = x * x + x * 3          -- dy/dx = 2x + 3
      y:backward(fnn.ones(3))
      approx({5, 7, 9}, p:grad())
   end)

   it('sums gradients back over broadcast dims', function()
      local p = Param(fnn.tensor{1, 2, 3})              -- [3]
      local q = Param(fnn.tensor{{1}, {2}})             -- [2,1]
      local y = p:tensor() * q:tensor()                 -- [2,3]
      y:backward(fnn.ones(2, 3))
      approx({3, 3, 3}, p:grad())                       -- sum over rows of q
      approx({6, 6}, q:grad())                          -- sum over p
      assert.same({2, 1}, q:grad():shape())
   end)

   it('accumulates over several backward passes until zero_grad', function()
      local p = Param(fnn.tensor{2})
      for _ = 1, 3 do (p:tensor() * 5):backward(fnn.ones(1)) end
      approx({15}, p:grad())
      p:zero_grad()
      assert.is_nil(p:grad())
   end)

   it('never changes a gradient tensor the user holds (accumulation in place only into private buffers)', function()
      local p = Param(fnn.ones(100))
      ;(p:tensor() * 2):sum():backward()
      local g1 = p:grad()
      ;(p:tensor() * 3):sum():backward()
      assert.equals(200, g1:sum():item())          -- still 2 everywhere
      assert.equals(500, p:grad():sum():item())    -- 2 + 3
      g1 = nil
      collectgarbage(); collectgarbage()
      ;(p:tensor() * 4):sum():backward()             -- now private: accumulated in place
      assert.equals(900, p:grad():sum():item())
   end)

   -- add, sub (its first input) and add_scalar hand the incoming gradient on by reference: both
   -- inputs of an add, and the user's seed, may then share one buffer. Large enough (2^18 elements)
   -- for the accumulation's threads
   it('keeps gradients that share a buffer apart: adding into one changes no other', function()
      fnn.set_num_threads(2)
      local function close(want, got, what)
         local d = (got - want):abs():max():item()
         assert(d <= 1e-5 * (want:abs():max():item() + 1), ('%s: off by %g'):format(what, d))
      end
      local a, b = Param(fnn.randn(512, 512)), Param(fnn.randn(512, 512))
      local seed = fnn.randn(512, 512)
      local seed_sum = seed:sum():item()
      ;(a:tensor() + b:tensor()):backward(seed)     -- a, b and the seed: one buffer
      close(seed, a:grad(), 'a after the add')
      close(seed, b:grad(), 'b after the add')
      ;(a:tensor() * 2):sum():backward()             -- into a alone
      close(seed + 2, a:grad(), 'a after a second backward')
      close(seed, b:grad(), 'b untouched by a\'s accumulation')
      assert.equals(seed_sum, seed:sum():item())     -- the user's seed too
      ;((b:tensor() - a:tensor()) + 1):sum():backward()   -- sub's first input and add_scalar pass it on too
      close(seed + 1, b:grad(), 'b after sub')
      close(seed + 1, a:grad(), 'a after sub')       -- + 2 - 1
      assert.equals(seed_sum, seed:sum():item())
      -- a residual add whose input a LayerNorm also reads (a block between, as attention or an MLP):
      -- the add passes its gradient on to x, and LayerNorm's is added into it in place
      local ln = nn.LayerNorm(512)
      local x = Param(fnn.randn(512, 512))
      local r = fnn.randn(512, 512)
      ;((x:tensor() + ln:forward(x:tensor()) * 0.5) * r):sum():backward()
      local xr = Param(x:tensor())
      ;(ln:forward(xr:tensor()) * 0.5 * r):sum():backward()
      close(r + xr:grad(), x:grad(), 'the residual stream')
      fnn.set_num_threads(1)
   end)

   it('names the op that made a tensor, nil for plain data', function()
      local p = Param(fnn.ones(2))
      assert.equals('mul_scalar', (p:tensor() * 2):grad_fn())
      assert.equals('exp', p:tensor():exp():grad_fn())
      assert.equals('Param', p:tensor():grad_fn())
      assert.is_nil(fnn.ones(2):grad_fn())
      assert.is_nil(p:tensor():detach():grad_fn())
   end)

   it('refuses a non-scalar without a gradient, and a tensor without a graph', function()
      local p = Param(fnn.ones(2, 2))
      local ok, err = pcall(function() (p:tensor() * 2):backward() end)
      assert.is_false(ok)
      assert.matches('backward: tensor %[2,2%] is not a scalar; pass a gradient of the same shape', err)
      ok, err = pcall(function() fnn.ones(3):backward(fnn.ones(3)) end)
      assert.matches('backward: tensor %[3%] has no graph', err)
      ok, err = pcall(function() (p:tensor() * 2):backward(fnn.ones(3)) end)
      assert.matches('backward: gradient %[3%] does not match tensor %[2,2%]', err)
   end)

   it('refuses a second backward through a freed graph', function()
      local p = Param(fnn.tensor{1, 2})
      local y = p:tensor():exp() * 2
      y:backward(fnn.ones(2))
      local ok, err = pcall(function() y:backward(fnn.ones(2)) end)
      assert.is_false(ok)
      assert.matches('already freed by an earlier backward', err)
   end)
end)

describe('slices', function()
   it('narrow and select gradients add into their input in place, with fan-out', function()
      -- x [4,10]: rows 1-2 times 2, rows 2-3 times 3, row 4 (select) times 5, and x itself
      local p = Param(fnn.arange(40):float():reshape{4, 10})
      local x = p:tensor()
      local y = (x:narrow(1, 1, 2) * 2):sum() + (x:narrow(1, 2, 2) * 3):sum() + (x:select(1, 4) * 5):sum()
               + x:sum()
      y:backward()
      local want = {}
      for r = 1, 4 do
         local g = 1 + (r <= 2 and 2 or 0) + ((r == 2 or r == 3) and 3 or 0) + (r == 4 and 5 or 0)
         for _ = 1, 10 do want[#want + 1] = g end
      end
      approx(want, p:grad())
   end)

   -- the slices' gradients meet in one accumulator (copied in while no two overlap, the rest zeroed once):
   -- y = sum_i (slice_i * W_i):sum() [+ (x * W0):sum()], so dx is each W_i placed at its slice, summed
   local function slices_case(shape, slices, whole, through_op)
      fnn.manual_seed(#slices * 7 + #shape)
      local p = Param(fnn.randn(table.unpack(shape)))
      local x = through_op and p:tensor() * 1.5 or p:tensor()
      local strides, n = {}, 1
      for d = #shape, 1, -1 do strides[d] = n; n = n * shape[d] end
      local want = {}
      for i = 1, n do want[i] = 0 end
      local y
      local function add(term) y = y and y + term or term end
      if whole then
         local w0 = fnn.randn(table.unpack(shape))
         add((x * w0):sum())
         local f = w0:to_flat()
         for i = 1, n do want[i] = want[i] + f[i] end
      end
      for _, sl in ipairs(slices) do
         local kind, d, start, len = sl[1], sl[2], sl[3], sl[4]
         local part = kind == 'narrow' and x:narrow(d, start, len) or x:select(d, start)
         local w = fnn.randn(table.unpack(part:shape()))
         add((part * w):sum())
         local f, pshape = w:to_flat(), part:shape()
         -- walk the slice's elements in order, mapping each to x's flat position
         local idx = {}
         for k = 1, #pshape do idx[k] = 1 end
         for e = 1, #f do
            local pos, k = 1, 1
            for dd = 1, #shape do
               local v
               if dd == d then
                  if kind == 'narrow' then v = start + idx[k] - 1; k = k + 1 else v = start end
               else v = idx[k]; k = k + 1 end
               pos = pos + (v - 1) * strides[dd]
            end
            want[pos] = want[pos] + f[e]
            for kk = #pshape, 1, -1 do
               idx[kk] = idx[kk] + 1
               if idx[kk] <= pshape[kk] then break end
               idx[kk] = 1
            end
         end
      end
      y:backward()
      if through_op then for i = 1, n do want[i] = want[i] * 1.5 end end
      approx(want, p:grad(), 1e-5)
   end

   it('a split into parts that cover the tensor (attention\'s q, k, v) gives each part\'s gradient in place',
      function()
      slices_case({4, 6, 21}, {{'narrow', 3, 1, 7}, {'narrow', 3, 8, 7}, {'narrow', 3, 15, 7}})
      slices_case({4, 6, 21}, {{'narrow', 3, 15, 7}, {'narrow', 3, 1, 7}, {'narrow', 3, 8, 7}}, false, true)
      slices_case({5, 33}, {{'narrow', 1, 1, 2}, {'narrow', 1, 3, 3}})
   end)

   -- from 2^18 elements a slab is written over the threads (engine.c's write_slab): attention's split
   -- at char_gpt's size, [2048, 384] in thirds, and one third left uncovered (zeroed), on 2 threads
   it('a split of 2048 rows covering two thirds, on 2 threads, places each part and zeros the rest', function()
      local threads = fnn.get_num_threads()
      fnn.set_num_threads(2)
      local ok, err = pcall(function()
         slices_case({2048, 384}, {{'narrow', 2, 257, 128}, {'narrow', 2, 1, 128}}, false, true)
      end)
      fnn.set_num_threads(threads)
      assert(ok, err)
   end)

   it('slices that leave parts uncovered give zeros there', function()
      slices_case({4, 6, 21}, {{'narrow', 3, 1, 7}, {'narrow', 3, 15, 7}})
      slices_case({4, 6, 21}, {{'narrow', 3, 8, 7}}, false, true)
      slices_case({7, 5, 3}, {{'select', 1, 2}, {'select', 1, 6}, {'narrow', 1, 4, 1}})
   end)

   it('overlapping slices, slices along two dims and more than eight slices add up', function()
      slices_case({4, 6, 21}, {{'narrow', 2, 1, 4}, {'narrow', 2, 3, 4}})
      slices_case({4, 6, 21}, {{'narrow', 3, 1, 7}, {'narrow', 2, 2, 3}, {'narrow', 3, 8, 14}})
      local ten = {}
      for i = 1, 10 do ten[i] = {'select', 2, i} end
      slices_case({3, 10, 9}, ten)
      ten[11] = {'narrow', 2, 4, 5}
      slices_case({3, 10, 9}, ten, false, true)
   end)

   it('slices mixed with a use of the whole tensor (fan-out of both kinds)', function()
      slices_case({4, 6, 21}, {{'narrow', 3, 1, 7}, {'narrow', 3, 8, 7}}, true)
      slices_case({4, 6, 21}, {{'narrow', 3, 1, 7}, {'narrow', 3, 8, 7}, {'narrow', 3, 15, 7}}, true, true)
      slices_case({3, 10, 9}, {{'select', 2, 3}, {'narrow', 2, 5, 6}}, true)
   end)

   it('slice gradients accumulate over two backward passes into a Param', function()
      local p = Param(fnn.randn(4, 30))
      for _ = 1, 2 do
         local x = p:tensor()
         local y = (x:narrow(2, 1, 10) * 2):sum() + (x:narrow(2, 11, 10) * 3):sum()
         y:backward()
      end
      local g = p:grad():to_table()
      for r = 1, 4 do
         for c = 1, 30 do assert.equals(c <= 10 and 4 or c <= 20 and 6 or 0, g[r][c]) end
      end
   end)

   it('gradients of many narrows of one tensor (an unrolled sequence) are exact', function()
      local p = Param(fnn.randn(50 * 3, 8))
      local total
      for t = 1, 50 do
         local s = p:tensor():narrow(1, (t - 1) * 3 + 1, 3) * t
         total = total and total + s or s
      end
      total:sum():backward()
      local g = p:grad():to_table()
      for t = 1, 50 do
         for r = 1, 3 do assert.equals(t, g[(t - 1) * 3 + r][5]) end
      end
   end)
end)

describe('Param', function()
   it('frozen params hand out detached tensors: no node, no gradient', function()
      local w = Param(fnn.tensor{1, 2}):freeze()
      local b = Param(fnn.tensor{1, 1})
      assert.is_true(w:frozen())
      assert.is_nil(w:tensor():grad_fn())
      local y = w:tensor() * b:tensor()
      y:backward(fnn.ones(2))
      assert.is_nil(w:grad())
      approx({1, 2}, b:grad())
      w:unfreeze()
      assert.equals('Param', w:tensor():grad_fn())
   end)

   it('set replaces the value and refuses another shape', function()
      local p = Param(fnn.zeros(2))
      p:set(fnn.tensor{3, 4})
      approx({3, 4}, p:tensor())
      local ok, err = pcall(function() p:set(fnn.zeros(3)) end)
      assert.matches('Param:set: new value %[3%], param is %[2%]', err)
   end)

   it('owns a copy: changing the source tensor later is impossible, and views work', function()
      local src = fnn.tensor{{1, 2}, {3, 4}}
      local p = Param(src)
      approx({1, 2, 3, 4}, p:tensor())
      assert.are_not.equal(src:storage_id(), p:tensor():storage_id())
   end)
end)

describe('grad modes', function()
   it('no_grad builds no node and restores the mode, even after an error', function()
      local p = Param(fnn.ones(2))
      local y = fnn.no_grad(function() return p:tensor() * 2 end)
      assert.is_nil(y:grad_fn())
      assert.is_true(fnn.is_grad_enabled())
      local ok = pcall(fnn.no_grad, function() error('boom') end)
      assert.is_false(ok)
      assert.is_true(fnn.is_grad_enabled())
      fnn.no_grad(function()
         fnn.no_grad(function() end)
         assert.is_false(fnn.is_grad_enabled())     -- nested: still off inside the outer
      end)
      assert.is_true(fnn.is_grad_enabled())
   end)

   it('detect_anomaly names the op, the element, the shape and the input', function()
      local p = Param(fnn.tensor{1, 0, 2})
      local y = p:tensor():log()                      -- d/dx log at 0 is inf
      local ok, err = pcall(fnn.detect_anomaly, function() y:backward(fnn.ones(3)) end)
      assert.is_false(ok)
      assert.matches('anomaly: log produced inf at element 2 of %[3%] in the gradient for input 1', err)
      local q = Param(fnn.tensor{4})
      local z = q:tensor():sqrt() * fnn.tensor{0 / 0}
      ok, err = pcall(fnn.detect_anomaly, function() z:backward(fnn.ones(1)) end)
      assert.matches('anomaly: mul produced nan at element 1 of %[1%] in the gradient for input 1', err)
      assert.is_nil(q:grad())                          -- the backward stopped before reaching q
      assert.is_true(fnn.gradients_are_finite({q}))
   end)

   it('without anomaly mode a non-finite gradient is stored, and gradients_are_finite says so', function()
      local p = Param(fnn.tensor{0, 1})
      p:tensor():log():backward(fnn.ones(2))
      assert.is_false(fnn.gradients_are_finite({p}))
      p:zero_grad()
      assert.is_true(fnn.gradients_are_finite({p}))
   end)
end)

describe('graph memory', function()
   it('frees saved tensors when the loss is dropped, returning live bytes and nodes', function()
      collectgarbage(); collectgarbage()
      local p = Param(fnn.randn(256, 256))
      collectgarbage(); collectgarbage()
      local bytes0, nodes0 = fnn.live_bytes(), fnn.live_nodes()
      do
         local x = p:tensor()
         local y = (x:exp() * x + x:tanh()) * 2
         assert.is_true(fnn.live_bytes() > bytes0 + 4 * 256 * 256 * 3)
         assert.is_true(fnn.live_nodes() > nodes0)
         y = nil
         x = nil
      end
      collectgarbage(); collectgarbage()
      assert.equals(bytes0, fnn.live_bytes())
      assert.equals(nodes0, fnn.live_nodes())
   end)

   it('backward frees saved tensors as it goes', function()
      local p = Param(fnn.randn(128, 128))
      collectgarbage(); collectgarbage()
      local y = p:tensor():exp():tanh():sigmoid()
      local before = fnn.live_bytes()
      y:backward(fnn.ones(128, 128))
      collectgarbage(); collectgarbage()
      -- what is left: y itself and p's gradient, not the saved intermediates
      assert.is_true(fnn.live_bytes() <= before)
   end)
end)
