-- optim: three steps of each optimizer against updates computed by hand (the
-- numbers in the comments), the PyTorch formulas written out in Lua doubles
-- for the general case, convergence on a quadratic, and the utilities.
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim

local approx = require('support').approx

-- loss = 0.5 * sum(c * p^2), so grad = c * p
local function backward_quadratic(p, c)
   local t = p:tensor()
   local loss = (t * t * c):sum() * 0.5
   loss:backward()
end

local function scaled(v, s)
   local r = {}
   for i, x in ipairs(v) do r[i] = x * s end
   return r
end

describe('optim.SGD', function()
   it('momentum 0.9, lr 0.1: three steps by hand', function()
      -- grad = p.  step 1: buf = 1, p = 1 - 0.1 = 0.9
      -- step 2: buf = 0.9 * 1 + 0.9 = 1.8, p = 0.9 - 0.18 = 0.72
      -- step 3: buf = 0.9 * 1.8 + 0.72 = 2.34, p = 0.72 - 0.234 = 0.486  (all linear in p0)
      local p0 = {1, -2, 0.5}
      local p = nn.Param(fnn.tensor(p0))
      local opt = optim.SGD({p}, 0.1, {momentum = 0.9})
      local expect = {0.9, 0.72, 0.486}
      for step = 1, 3 do
         opt:zero_grad()
         backward_quadratic(p, 1)
         opt:step()
         approx(scaled(p0, expect[step]), p:tensor())
      end
   end)

   it('nesterov with weight decay 0.1: three steps by hand', function()
      -- g = p + 0.1 p = 1.1 p; d = g + 0.9 buf
      -- step 1: g = 1.1, buf = 1.1, d = 2.09, p = 1 - 0.209 = 0.791
      -- step 2: g = 0.8701, buf = 0.99 + 0.8701 = 1.8601, d = 0.8701 + 1.67409 = 2.54419, p = 0.536581
      -- step 3: g = 0.5902391, buf = 1.67409 + 0.5902391 = 2.2643291,
      --         d = 0.5902391 + 2.03789619 = 2.62813529, p = 0.536581 - 0.262813529 = 0.273767471
      local p0 = {1, -3}
      local p = nn.Param(fnn.tensor(p0))
      local opt = optim.SGD({p}, {lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.1})
      local expect = {0.791, 0.536581, 0.273767471}
      for step = 1, 3 do
         opt:zero_grad()
         backward_quadratic(p, 1)
         opt:step()
         approx(scaled(p0, expect[step]), p:tensor())
      end
   end)

   it('dampening applies from the second step on; plain SGD without momentum', function()
      -- momentum 0.5, dampening 0.5, lr 0.1, grad = p
      -- step 1: buf = 1 (no dampening), p = 0.9
      -- step 2: buf = 0.5 * 1 + 0.5 * 0.9 = 0.95, p = 0.9 - 0.095 = 0.805
      -- step 3: buf = 0.475 + 0.4025 = 0.8775, p = 0.805 - 0.08775 = 0.71725
      local p = nn.Param(fnn.tensor{2})
      local opt = optim.SGD({p}, 0.1, {momentum = 0.5, dampening = 0.5})
      local q = nn.Param(fnn.tensor{2})
      local plain = optim.SGD({q}, 0.1)          -- p = p * 0.9 each step
      local expect = {0.9, 0.805, 0.71725}
      for step = 1, 3 do
         opt:zero_grad(); plain:zero_grad()
         backward_quadratic(p, 1); backward_quadratic(q, 1)
         opt:step(); plain:step()
         approx({2 * expect[step]}, p:tensor())
         approx({2 * 0.9 ^ step}, q:tensor())
      end
      assert.is_nil(plain:state().params[1].momentum_buffer)
   end)

   it('converges on a quadratic', function()
      local target = fnn.tensor{3, -1, 0.5, 2}
      local p = nn.Param(fnn.zeros(4))
      local opt = optim.SGD({p}, 0.05, {momentum = 0.9})
      for _ = 1, 300 do
         opt:zero_grad()
         local d = p:tensor() - target
         local loss = (d * d):sum()
         loss:backward()
         opt:step()
      end
      approx(target:to_flat(), p:tensor(), 1e-3)
   end)
end)

-- the PyTorch Adam/AdamW step written out for one element (doubles)
local function adam_ref(p, g, st, lr, b1, b2, eps, wd, decoupled)
   st.t = st.t + 1
   if decoupled then p = p * (1 - lr * wd) elseif wd ~= 0 then g = g + wd * p end
   st.m = b1 * st.m + (1 - b1) * g
   st.v = b2 * st.v + (1 - b2) * g * g
   local mhat = st.m / (1 - b1 ^ st.t)
   local vhat = st.v / (1 - b2 ^ st.t)
   return p - lr * mhat / (math.sqrt(vhat) + eps)
end

describe('optim.Adam and AdamW', function()
   it('Adam lr 0.1: three steps by hand', function()
      -- grad = p, p0 = 1. step 1: m = 0.1, v = 0.001, mhat = 1, vhat = 1, p = 1 - 0.1 = 0.9
      -- step 2: m = 0.09 + 0.09 = 0.18, v = 0.000999 + 0.00081 = 0.001809,
      --   mhat = 0.18 / 0.19 = 0.9473684, vhat = 0.001809 / 0.001999 = 0.9049525,
      --   p = 0.9 - 0.1 * 0.9473684 / 0.9512899 = 0.8004122
      -- step 3: m = 0.162 + 0.08004122 = 0.24204122, v = 0.001807191 + 0.000640659 = 0.00244785,
      --   mhat = 0.24204122 / 0.271 = 0.8931410, vhat = 0.00244785 / 0.002997003 = 0.8167659,
      --   p = 0.8004122 - 0.1 * 0.8931410 / 0.9037510 = 0.7015862
      local p = nn.Param(fnn.tensor{1})
      local opt = optim.Adam({p}, 0.1)
      local expect = {0.9, 0.8004122, 0.7015862}
      for step = 1, 3 do
         opt:zero_grad()
         backward_quadratic(p, 1)
         opt:step()
         approx({expect[step]}, p:tensor(), 1e-5)
      end
      assert.equals(3, opt:state().params[1].step)
   end)

   local function run(cls, opts, wd, decoupled)
      local p0, c = {1.5, -0.7, 0.2, -2.0}, fnn.tensor{1, 2, 0.5, 3}
      local cs = c:to_flat()
      local p = nn.Param(fnn.tensor(p0))
      local opt = optim[cls]({p}, opts)
      local ref, st = {}, {}
      for i = 1, #p0 do ref[i], st[i] = p0[i], {t = 0, m = 0, v = 0} end
      for _ = 1, 3 do
         opt:zero_grad()
         backward_quadratic(p, c)
         opt:step()
         for i = 1, #p0 do
            ref[i] = adam_ref(ref[i], cs[i] * ref[i], st[i], opts.lr, opts.betas[1], opts.betas[2],
                              opts.eps or 1e-8, wd, decoupled)
         end
         approx(ref, p:tensor(), 1e-5)
      end
   end

   it('Adam with coupled weight decay and custom betas matches the formula', function()
      run('Adam', {lr = 0.05, betas = {0.8, 0.99}, weight_decay = 0.1}, 0.1, false)
   end)

   it('AdamW decays the weights apart from the gradient (default weight_decay 0.01)', function()
      run('AdamW', {lr = 0.05, betas = {0.9, 0.999}}, 0.01, true)
      run('AdamW', {lr = 0.05, betas = {0.9, 0.999}, weight_decay = 0.5}, 0.5, true)
   end)

   it('flushes a moment to zero once it falls below the smallest normal float, and w follows the formula', function()
      -- one step with gradient 1, then gradient 0: m = 0.1 * 0.9^k. After 800 such steps m is 2.2e-38, normal;
      -- after 830, 9.3e-40, subnormal in float32, where PyTorch keeps it (and pays an assist a step on x86):
      -- here exactly 0. v = 0.001 * 0.999^k stays normal. w moves as the formula in doubles says throughout
      local p = nn.Param(fnn.tensor{1})
      local opt = optim.Adam({p}, 0.1)
      local ref, st = 1, {t = 0, m = 0, v = 0}
      local function step(c)
         opt:zero_grad()
         backward_quadratic(p, c)
         opt:step()
         ref = adam_ref(ref, c * ref, st, 0.1, 0.9, 0.999, 1e-8, 0, false)
      end
      step(1)
      for _ = 1, 800 do step(0) end
      local m = opt:state().params[1].exp_avg:item()
      assert.is_true(m >= 1.17549435e-38, ('m %.9g after 800 steps'):format(m))
      assert.is_true(math.abs(m - st.m) <= 1e-3 * st.m, ('m %.9g, formula %.9g'):format(m, st.m))
      for _ = 1, 30 do step(0) end
      assert.is_true(st.m > 0 and st.m < 1.17549435e-38, 'the formula\'s m is subnormal now')
      assert.equals(0, opt:state().params[1].exp_avg:item())
      assert.is_true(opt:state().params[1].exp_avg_sq:item() > 1e-4)
      approx({ref}, p:tensor(), 1e-4)   -- 831 float32 updates' rounding against doubles
   end)

   it('converges on a quadratic', function()
      local target = fnn.tensor{3, -1, 0.5, 2}
      local p = nn.Param(fnn.zeros(4))
      local opt = optim.Adam(p, {lr = 0.1})
      for _ = 1, 500 do
         opt:zero_grad()
         local d = p:tensor() - target
         local loss = (d * d):sum()
         loss:backward()
         opt:step()
      end
      approx(target:to_flat(), p:tensor(), 1e-2)
   end)

   it('trains a module given as the params argument', function()
      fnn.manual_seed(3)
      local m = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
      local x = fnn.randn(16, 2)
      local y = x:sum(2, true):tanh()
      local opt = optim.AdamW(m, 1e-2)
      local first, last
      for i = 1, 100 do
         local loss = nn.mse(m(x), y)
         if i == 1 then first = loss:item() end
         last = loss:item()
         opt:zero_grad(); loss:backward(); opt:step()
      end
      assert.is_true(last < 0.5 * first)
   end)
end)

describe('optimizer behaviour', function()
   it('skips params with no gradient and frozen params', function()
      local a, b, c = nn.Param(fnn.ones(2)), nn.Param(fnn.ones(2)), nn.Param(fnn.ones(2))
      local opt = optim.SGD({a, b, c}, 0.5)
      c:freeze()
      backward_quadratic(a, 1)
      opt:step()
      approx({0.5, 0.5}, a:tensor())
      approx({1, 1}, b:tensor())
      approx({1, 1}, c:tensor())
      local s = opt:state()
      assert.same({1, 0, 0}, {s.params[1].step, s.params[2].step, s.params[3].step})
   end)

   it('zero_grad clears every gradient', function()
      local a = nn.Param(fnn.ones(2))
      local opt = optim.Adam({a})
      backward_quadratic(a, 1)
      assert.is_not_nil(a:grad())
      opt:zero_grad()
      assert.is_nil(a:grad())
   end)

   it('groups carry their own options; lr() and set_lr()', function()
      local a, b = nn.Param(fnn.ones(1)), nn.Param(fnn.ones(1))
      local opt = optim.SGD({{params = {a}, lr = 0.5}, {params = {b}}}, {lr = 0.1})
      backward_quadratic(a, 1); backward_quadratic(b, 1)
      opt:step()
      approx({0.5}, a:tensor())
      approx({0.9}, b:tensor())
      assert.equals(0.5, opt:lr())
      opt:set_lr(0.25)
      assert.equals(0.25, opt:lr())
      assert.equals(0.25, opt.groups[2].lr)
      assert.equals(2, #opt:parameters())
   end)

   it('the unbound form binds later; named pairs are accepted', function()
      local m = nn.Linear(2, 2)
      local opt = optim.Adam{lr = 0.01}
      assert.equals(0, #opt:parameters())
      assert.equals(0.01, opt:lr())
      opt:bind(m:named_parameters())
      assert.equals(2, #opt:parameters())
      assert.equals(0.01, opt.groups[1].lr)
   end)

   it('refuses unknown options, bad values and bad parameter lists at the caller line', function()
      local p = {nn.Param(fnn.ones(1))}
      local ok, err = pcall(function() optim.Adam(p, {lr = 1, beta = 0.9}) end)
      assert.matches("optim_spec%.lua:%d+: optim%.Adam: unknown option 'beta'", err)
      assert.has_error(function() optim.SGD(p, -1) end, 'optim.SGD: invalid learning rate -1')
      assert.has_error(function() optim.SGD(p, 0.1, {nesterov = true}) end,
                       'optim.SGD: nesterov momentum requires a momentum and zero dampening')
      assert.has_error(function() optim.Adam(p, {betas = {0.9, 1.5}}) end)
      assert.has_error(function() optim.Adam(p, {eps = -1}) end)
      ok, err = pcall(function() optim.SGD({p[1], 3}, 0.1) end)
      assert.matches('element 2 of the parameter list is a number, expected an nn.Param', err)
      assert.has_error(function() optim.SGD({p[1], p[1]}, 0.1) end, 'optim.SGD: a parameter appears twice')
   end)

   it('gradients_are_finite sees an inf gradient', function()
      local a, b = nn.Param(fnn.ones(2)), nn.Param(fnn.ones(2))
      local opt = optim.SGD({a, b}, 0.1)
      assert.is_true(opt:gradients_are_finite())
      backward_quadratic(a, 1)
      assert.is_true(opt:gradients_are_finite())
      b:set_grad(fnn.tensor{1, math.huge})
      assert.is_false(opt:gradients_are_finite())
      assert.is_false(optim.gradients_are_finite({a, b}))
   end)

   it('state() and load_state() round-trip: a restored optimizer continues identically', function()
      local function fresh() return nn.Param(fnn.tensor{1, -2, 3}) end
      local c = fnn.tensor{1, 0.5, 2}
      local p1 = fresh()
      local o1 = optim.Adam({p1}, 0.1)
      for _ = 1, 2 do o1:zero_grad(); backward_quadratic(p1, c); o1:step() end
      local s = o1:state()
      assert.equals(2, s.steps)
      assert.equals(2, s.params[1].step)
      assert.same({3}, s.params[1].exp_avg:shape())
      assert.equals(0.1, s.groups[1].lr)

      local p2 = fresh()
      p2:set(p1:tensor())
      local o2 = optim.Adam({p2}, 0.5)
      o2:load_state(s)
      assert.equals(0.1, o2:lr())
      for _ = 1, 2 do
         o1:zero_grad(); backward_quadratic(p1, c); o1:step()
         o2:zero_grad(); backward_quadratic(p2, c); o2:step()
      end
      approx(p1:tensor():to_flat(), p2:tensor(), 1e-6)
      -- the loaded tensors were copied: o1's later steps did not touch s
      assert.equals(2, s.params[1].step)
   end)

   it('load_state refuses a mismatched state and leaves the optimizer unchanged', function()
      local p = nn.Param(fnn.ones(3))
      local opt = optim.Adam({p}, 0.1)
      backward_quadratic(p, 1); opt:step()
      local other = optim.Adam({nn.Param(fnn.ones(2))}, 0.1)
      other:zero_grad()
      backward_quadratic(other.groups[1].params[1], 1); other:step()
      local ok, err = pcall(function() opt:load_state(other:state()) end)
      assert.matches('optim%.Adam: load_state: exp_avg of parameter 1 is %[2%], the parameter is %[3%]', err)
      assert.has_error(function() opt:load_state({params = {}}) end,
                       'optim.Adam: load_state: state has 0 parameters, this optimizer has 1')
      assert.equals(1, opt:state().params[1].step)
   end)
end)

describe('optim.clip_grad_norm', function()
   it('scales gradients to the max global norm and returns the norm before clipping', function()
      local a, b = nn.Param(fnn.tensor{3, 0}), nn.Param(fnn.tensor{0})
      backward_quadratic(a, 1)                  -- grad {3, 0}
      b:set_grad(fnn.tensor{4})                 -- global norm sqrt(9 + 16) = 5
      local norm = optim.clip_grad_norm({a, b}, 1)
      assert.is_true(math.abs(norm - 5) < 1e-5)
      approx({0.6, 0}, a:grad(), 1e-5)
      approx({0.8}, b:grad(), 1e-5)
      -- under the limit: untouched
      norm = optim.clip_grad_norm({a, b}, 10)
      assert.is_true(math.abs(norm - 1) < 1e-4)
      approx({0.6, 0}, a:grad(), 1e-5)
   end)

   it('takes a module and ignores params without gradients', function()
      local m = nn.Linear(2, 2)
      assert.equals(0, optim.clip_grad_norm(m, 1))
   end)
end)
