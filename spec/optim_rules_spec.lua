-- Every optimizer against its published update rule (PyTorch's conventions), computed here in
-- double precision from fixed gradients; convergence on a convex quadratic; state()/load_state()
-- giving bit-identical next steps; Lookahead and Ema; the schedules against their formulas;
-- and the refusals.
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim

local W0 = {0.5, -1.25, 2.0, 0.0, -0.3}
local GRADS = {                                  -- fixed gradients, one row per step
   {0.1, -0.4, 0.25, 1.5, -0.05},
   {-0.3, 0.2, 0.5, -1.0, 0.0},
   {0.7, 0.1, -0.2, 0.3, 0.6},
   {0.2, -0.6, 0.1, 0.4, -0.3},
   {-0.1, 0.3, 0.3, -0.2, 0.2},
   {0.4, 0.0, -0.5, 0.6, -0.4},
   {0.05, 0.5, 0.2, -0.3, 0.1},
   {-0.2, -0.1, 0.4, 0.2, 0.3},
}

local function copy(t) local r = {} for i, v in ipairs(t) do r[i] = v end return r end

-- run `steps` steps of opt on a fresh Param from W0 with GRADS; the values after each step
local function run(make, steps)
   local p = nn.Param(fnn.tensor(W0))
   local opt = make({p})
   local after = {}
   for s = 1, steps do
      p:set_grad(fnn.tensor(GRADS[s]))
      opt:step()
      after[s] = p:tensor():to_table()
   end
   return after, p, opt
end

local function close(want, got, what)
   for i = 1, #want do
      local tol = 2e-6 * math.max(1, math.abs(want[i]))
      if math.abs(want[i] - got[i]) > tol then
         error(('%s element %d: expected %.9g, got %.9g'):format(what, i, want[i], got[i]), 2)
      end
   end
end

-- reference rules: state per element, w updated in place; step t from 1
local rules = {}

function rules.sgd(o)
   local buf = {}
   return function(w, g, t)
      for i = 1, #w do
         local d = g[i] + o.wd * w[i]
         if o.decoupled then d = g[i]; w[i] = w[i] * (1 - o.lr * o.wd) end
         if o.momentum > 0 then
            buf[i] = t == 1 and d or o.momentum * buf[i] + (1 - o.dampening) * d
            d = o.nesterov and d + o.momentum * buf[i] or buf[i]
         end
         w[i] = w[i] - o.lr * d
      end
   end
end

function rules.adam(o)
   local m, v, vmax = {}, {}, {}
   return function(w, g, t)
      for i = 1, #w do
         local gi = g[i]
         if o.decoupled then w[i] = w[i] * (1 - o.lr * o.wd) else gi = gi + o.wd * w[i] end
         m[i] = o.b1 * (m[i] or 0) + (1 - o.b1) * gi
         v[i] = o.b2 * (v[i] or 0) + (1 - o.b2) * gi * gi
         local vv = v[i]
         if o.amsgrad then vmax[i] = math.max(vmax[i] or 0, v[i]); vv = vmax[i] end
         local bc1, bc2 = 1 - o.b1 ^ t, 1 - o.b2 ^ t
         w[i] = w[i] - o.lr / bc1 * m[i] / (math.sqrt(vv) / math.sqrt(bc2) + o.eps)
      end
   end
end

function rules.rmsprop(o)
   local sq, ga, buf = {}, {}, {}
   return function(w, g)
      for i = 1, #w do
         local gi = g[i] + o.wd * w[i]
         sq[i] = o.alpha * (sq[i] or 0) + (1 - o.alpha) * gi * gi
         local avg
         if o.centered then
            ga[i] = o.alpha * (ga[i] or 0) + (1 - o.alpha) * gi
            avg = math.sqrt(sq[i] - ga[i] * ga[i]) + o.eps
         else
            avg = math.sqrt(sq[i]) + o.eps                  -- eps outside the sqrt
         end
         if o.momentum > 0 then
            buf[i] = o.momentum * (buf[i] or 0) + gi / avg
            w[i] = w[i] - o.lr * buf[i]
         else
            w[i] = w[i] - o.lr * gi / avg
         end
      end
   end
end

function rules.adagrad(o)
   local sum = {}
   return function(w, g, t)
      local clr = o.lr / (1 + (t - 1) * o.lr_decay)
      for i = 1, #w do
         local gi = g[i] + o.wd * w[i]
         sum[i] = (sum[i] or o.init) + gi * gi
         w[i] = w[i] - clr * gi / (math.sqrt(sum[i]) + o.eps)
      end
   end
end

function rules.adadelta(o)
   local sq, acc = {}, {}
   return function(w, g)
      for i = 1, #w do
         local gi = g[i] + o.wd * w[i]
         sq[i] = o.rho * (sq[i] or 0) + (1 - o.rho) * gi * gi
         local delta = math.sqrt((acc[i] or 0) + o.eps) / math.sqrt(sq[i] + o.eps) * gi
         acc[i] = o.rho * (acc[i] or 0) + (1 - o.rho) * delta * delta
         w[i] = w[i] - o.lr * delta
      end
   end
end

function rules.radam(o)
   local m, v = {}, {}
   return function(w, g, t)
      local rho_inf = 2 / (1 - o.b2) - 1
      local bc1, bc2 = 1 - o.b1 ^ t, 1 - o.b2 ^ t
      local rho_t = rho_inf - 2 * t * o.b2 ^ t / bc2
      for i = 1, #w do
         local gi = g[i] + o.wd * w[i]
         m[i] = o.b1 * (m[i] or 0) + (1 - o.b1) * gi
         v[i] = o.b2 * (v[i] or 0) + (1 - o.b2) * gi * gi
         local mhat = m[i] / bc1
         if rho_t > 5 then
            local r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            w[i] = w[i] - o.lr * mhat * r * math.sqrt(bc2) / (math.sqrt(v[i]) + o.eps)
         else
            w[i] = w[i] - o.lr * mhat
         end
      end
   end
end

function rules.lion(o)
   local m = {}
   return function(w, g)
      for i = 1, #w do
         local mi = m[i] or 0
         local c = o.b1 * mi + (1 - o.b1) * g[i]
         local sign = c > 0 and 1 or (c < 0 and -1 or 0)
         w[i] = w[i] * (1 - o.lr * o.wd) - o.lr * sign
         m[i] = o.b2 * mi + (1 - o.b2) * g[i]
      end
   end
end

-- name, maker, rule, steps
local cases = {
   {'SGD plain', function(p) return optim.SGD(p, 0.1) end,
    rules.sgd{lr = 0.1, wd = 0, momentum = 0, dampening = 0}},
   {'SGD momentum, dampening, coupled decay', function(p)
      return optim.SGD(p, 0.1, {momentum = 0.9, dampening = 0.1, weight_decay = 0.01}) end,
    rules.sgd{lr = 0.1, wd = 0.01, momentum = 0.9, dampening = 0.1}},
   {'SGD nesterov', function(p) return optim.SGD(p, 0.05, {momentum = 0.8, nesterov = true}) end,
    rules.sgd{lr = 0.05, wd = 0, momentum = 0.8, dampening = 0, nesterov = true}},
   {'SGD decoupled decay', function(p)
      return optim.SGD(p, 0.1, {momentum = 0.5, weight_decay = 0.1, decoupled_weight_decay = true}) end,
    rules.sgd{lr = 0.1, wd = 0.1, momentum = 0.5, dampening = 0, decoupled = true}},
   {'Adam (bias correction)', function(p) return optim.Adam(p, 0.01) end,
    rules.adam{lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0}},
   {'Adam coupled decay, other betas', function(p)
      return optim.Adam(p, {lr = 0.02, betas = {0.8, 0.95}, weight_decay = 0.1}) end,
    rules.adam{lr = 0.02, b1 = 0.8, b2 = 0.95, eps = 1e-8, wd = 0.1}},
   {'Adam amsgrad (max of the second moments)', function(p) return optim.Adam(p, 0.01, {amsgrad = true}) end,
    rules.adam{lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0, amsgrad = true}},
   {'AdamW (decoupled lr*wd*p)', function(p) return optim.AdamW(p, 0.01, {weight_decay = 0.1}) end,
    rules.adam{lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1, decoupled = true}},
   {'AdamW amsgrad', function(p) return optim.AdamW(p, 0.01, {amsgrad = true}) end,
    rules.adam{lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01, decoupled = true, amsgrad = true}},
   {'RMSprop (eps outside the sqrt)', function(p) return optim.RMSprop(p, 0.01, {eps = 1e-2}) end,
    rules.rmsprop{lr = 0.01, alpha = 0.99, eps = 1e-2, wd = 0, momentum = 0}},
   {'RMSprop centered, momentum, decay', function(p)
      return optim.RMSprop(p, 0.01, {centered = true, momentum = 0.9, weight_decay = 0.05, alpha = 0.9}) end,
    rules.rmsprop{lr = 0.01, alpha = 0.9, eps = 1e-8, wd = 0.05, momentum = 0.9, centered = true}},
   {'Adagrad (initial accumulator, lr decay)', function(p)
      return optim.Adagrad(p, 0.1, {initial_accumulator_value = 0.5, lr_decay = 0.1}) end,
    rules.adagrad{lr = 0.1, lr_decay = 0.1, wd = 0, eps = 1e-10, init = 0.5}},
   {'Adagrad coupled decay', function(p) return optim.Adagrad(p, 0.1, {weight_decay = 0.2}) end,
    rules.adagrad{lr = 0.1, lr_decay = 0, wd = 0.2, eps = 1e-10, init = 0}},
   {'Adadelta', function(p) return optim.Adadelta(p) end,
    rules.adadelta{lr = 1.0, rho = 0.9, eps = 1e-6, wd = 0}},
   {'Adadelta lr, rho, decay', function(p) return optim.Adadelta(p, 0.5, {rho = 0.8, weight_decay = 0.1}) end,
    rules.adadelta{lr = 0.5, rho = 0.8, eps = 1e-6, wd = 0.1}},
   {'RAdam (rectified once rho_t > 5, from step 6)', function(p) return optim.RAdam(p, 0.01) end,
    rules.radam{lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0}},
   {'Lion (sign update, decoupled decay)', function(p) return optim.Lion(p, 0.01, {weight_decay = 0.5}) end,
    rules.lion{lr = 0.01, b1 = 0.9, b2 = 0.99, wd = 0.5}},
}

describe('optimizer update rules', function()
   for _, case in ipairs(cases) do
      it(case[1] .. ' matches the published rule step by step', function()
         local steps = #GRADS
         local got = run(case[2], steps)
         local w = copy(W0)
         for s = 1, steps do
            case[3](w, GRADS[s], s)
            close(w, got[s], ('%s step %d'):format(case[1], s))
         end
      end)
   end

   it('RAdam takes the plain momentum step below the threshold and the rectified one above it', function()
      -- rho_t for betas (0.9, 0.999): about 1, 2, 3, 4, 5 for t = 1..5, > 5 from t = 6
      local rho_inf = 2 / 0.001 - 1
      local function rho(t) return rho_inf - 2 * t * 0.999 ^ t / (1 - 0.999 ^ t) end
      assert.is_true(rho(5) <= 5 and rho(6) > 5)
      local got = run(function(p) return optim.RAdam(p, 0.01) end, 6)
      -- step 1 is plain: w - lr * g (m / bc1 = g)
      close({W0[1] - 0.01 * GRADS[1][1]}, {got[1][1]}, 'RAdam step 1')
   end)

   it('skips a parameter without a gradient and never touches a frozen one', function()
      for _, case in ipairs(cases) do
         local a, b = nn.Param(fnn.tensor(W0)), nn.Param(fnn.tensor(W0))
         local opt = case[2]({a, b})
         b:freeze()
         a:set_grad(fnn.tensor(GRADS[1]))
         opt:step()
         assert.same(fnn.tensor(W0):to_table(), b:tensor():to_table(), case[1])
         local c = nn.Param(fnn.tensor(W0))
         local opt2 = case[2]({c})
         opt2:step()                       -- no gradient at all
         assert.same(fnn.tensor(W0):to_table(), c:tensor():to_table(), case[1])
      end
   end)
end)

describe('decaying states flush to zero below the smallest normal float', function()
   -- where a gradient stops, a state that decays by a factor a step (momentum buffers, moments, running
   -- averages) would pass through the float32 subnormals, each element a microcode assist on x86 (RMSprop
   -- took 45x as long a step with its states subnormal); they flush to zero instead (PyTorch keeps them).
   -- States seeded +-3e-39 (subnormal) on odd elements, 0.5 on even ones, over 37 elements (vector lanes
   -- and a tail), then one step with a zero gradient: the odd ones exactly 0 and their w untouched, the
   -- even ones the factor times 0.5, exactly
   local MIN_NORMAL = 1.17549435e-38
   local function f32(x) return fnn.tensor{x}:to_flat()[1] end
   local flushing = {
      {'SGD momentum', function(p) return optim.SGD(p, 0.1, {momentum = 0.9}) end, {momentum_buffer = 0.9}},
      {'SGD nesterov', function(p) return optim.SGD(p, 0.1, {momentum = 0.8, nesterov = true}) end,
       {momentum_buffer = 0.8}},
      {'Adam', function(p) return optim.Adam(p, 0.01) end, {exp_avg = 0.9, exp_avg_sq = 0.999}},
      {'RMSprop', function(p) return optim.RMSprop(p, 0.01) end, {square_avg = 0.99}},
      {'RMSprop centered, momentum', function(p) return optim.RMSprop(p, 0.01, {centered = true, momentum = 0.9}) end,
       {square_avg = 0.99, grad_avg = 0.99, momentum_buffer = 0.9}},
      {'Adadelta', function(p) return optim.Adadelta(p) end, {square_avg = 0.9, acc_delta = 0.9}},
      {'RAdam', function(p) return optim.RAdam(p, 0.01) end, {exp_avg = 0.9, exp_avg_sq = 0.999}},
   }
   for _, case in ipairs(flushing) do
      it(case[1], function()
         local n = 37
         local p = nn.Param(fnn.full({n}, 0.75))
         local opt = case[2]({p})
         p:set_grad(fnn.ones(n))
         opt:step()
         local st = opt:state()
         for name in pairs(case[3]) do
            local seed = {}
            for i = 1, n do seed[i] = i % 2 == 1 and (i % 4 == 1 and 3e-39 or -3e-39) or 0.5 end
            assert.is_true(math.abs(f32(3e-39)) < MIN_NORMAL and f32(3e-39) > 0, 'the seed is subnormal')
            assert.is_not_nil(st.params[1][name], name)
            st.params[1][name] = fnn.tensor(seed)
         end
         opt:load_state(st)
         local w0 = p:tensor():to_flat()
         p:set_grad(fnn.zeros(n))
         opt:step()
         local after, w = opt:state().params[1], p:tensor():to_flat()
         for name, factor in pairs(case[3]) do
            local got = after[name]:to_flat()
            for i = 1, n do
               local want = i % 2 == 1 and 0 or f32(factor) * 0.5
               assert.equals(want, got[i], ('%s[%d]'):format(name, i))
            end
         end
         for i = 1, n, 2 do assert.equals(w0[i], w[i], ('w[%d]'):format(i)) end
      end)
   end

   it('except Lion\'s m, whose sign moves w by a whole lr however small it is (as PyTorch\'s does)', function()
      local p = nn.Param(fnn.full({5}, 0.75))
      local opt = optim.Lion({p}, 0.01)
      p:set_grad(fnn.ones(5))
      opt:step()
      local st = opt:state()
      st.params[1].exp_avg = fnn.tensor{3e-39, -3e-39, 0.5, 3e-39, -3e-39}
      opt:load_state(st)
      local w0 = p:tensor():to_flat()
      p:set_grad(fnn.zeros(5))
      opt:step()
      local m, w = opt:state().params[1].exp_avg:to_flat(), p:tensor():to_flat()
      for i, sign in ipairs{1, -1, 1, 1, -1} do
         assert.equals(f32(w0[i] - f32(0.01) * sign), w[i], ('w[%d]'):format(i))
         if i ~= 3 then
            assert.is_true(m[i] ~= 0 and math.abs(m[i]) < MIN_NORMAL, ('m[%d] %.9g stays subnormal'):format(i, m[i]))
         end
      end
   end)
end)

describe('optimizers on a convex quadratic', function()
   -- f(p) = sum a_i (p_i - c_i)^2, minimum at c
   local a, c = fnn.tensor{1, 3, 0.5, 2}, fnn.tensor{1, -2, 0.5, 3}
   local setups = {
      {'SGD', function(p) return optim.SGD(p, 0.1, {momentum = 0.5}) end, 300},
      {'Adam', function(p) return optim.Adam(p, 0.05) end, 1500},
      {'AdamW', function(p) return optim.AdamW(p, 0.05, {weight_decay = 0}) end, 1500},
      {'Adam amsgrad', function(p) return optim.Adam(p, 0.05, {amsgrad = true}) end, 1500},
      {'RMSprop', function(p) return optim.RMSprop(p, 0.01, {centered = true}) end, 1500},
      {'Adagrad', function(p) return optim.Adagrad(p, 0.5) end, 1500},
      {'Adadelta', function(p) return optim.Adadelta(p, 50) end, 1500},
      {'RAdam', function(p) return optim.RAdam(p, 0.05) end, 1500},
      {'Lion', function(p) return optim.Lion(p, 0.001) end, 6000},
   }
   for _, s in ipairs(setups) do
      it(s[1] .. ' drives it to its minimum', function()
         local p = nn.Param(fnn.zeros(4))
         local opt = s[2]({p})
         for _ = 1, s[3] do
            opt:zero_grad()
            local d = p:tensor() - c
            local f = ((d * d) * a):sum()
            f:backward()
            opt:step()
         end
         local got, want = p:tensor():to_table(), c:to_table()
         for i = 1, 4 do
            assert(math.abs(got[i] - want[i]) < 0.02, ('%s: element %d at %.5f, minimum %.5f'):format(
               s[1], i, got[i], want[i]))
         end
      end)
   end
end)

describe('state() and load_state()', function()
   for _, case in ipairs(cases) do
      it(case[1] .. ': a fresh optimizer loaded with state() takes bit-identical next steps', function()
         local _, p1, opt1 = run(case[2], 3)
         local p2 = nn.Param(p1:tensor():detach() * 1)
         local opt2 = case[2]({p2})
         opt2:load_state(opt1:state())
         for s = 4, 6 do
            p1:set_grad(fnn.tensor(GRADS[s]))
            p2:set_grad(fnn.tensor(GRADS[s]))
            opt1:step()
            opt2:step()
            assert.same(p1:tensor():to_table(), p2:tensor():to_table())
         end
      end)
   end

   it('keeps the hyperparameters: a loaded state brings back the learning rate', function()
      local _, _, opt1 = run(function(p) return optim.Adam(p, 0.01) end, 2)
      opt1:set_lr(0.003)
      local opt2 = optim.Adam({nn.Param(fnn.tensor(W0))}, 0.1)
      opt2:load_state(opt1:state())
      assert.equals(0.003, opt2:lr())
   end)

   it('refuses a state from another optimizer or another parameter list, leaving the optimizer unchanged', function()
      local _, _, adam = run(function(p) return optim.Adam(p, 0.01) end, 2)
      local sgd = optim.SGD({nn.Param(fnn.tensor(W0))}, 0.1, {momentum = 0.9})
      assert.has_error(function() sgd:load_state(adam:state()) end, 'optim.SGD: load_state: the state is from optim.Adam')
      local two = optim.Adam({nn.Param(fnn.tensor(W0)), nn.Param(fnn.ones(2))}, 0.01)
      assert.has_error(function() two:load_state(adam:state()) end,
                       'optim.Adam: load_state: state has 1 parameters, this optimizer has 2')
      local other = optim.Adam({nn.Param(fnn.ones(3))}, 0.01)
      local ok, err = pcall(function() other:load_state(adam:state()) end)
      assert.is_false(ok)
      assert.matches('exp_avg of parameter 1 is %[5%], the parameter is %[3%]', err)
      assert.is_nil(other:state().params[1].exp_avg)      -- unchanged: still no moments
   end)

   for _, case in ipairs(cases) do
      it(case[1] .. ': a stepped parameter\'s state without a buffer its options use is refused, naming it', function()
         local _, p1, opt1 = run(case[2], 2)
         local full = opt1:state()
         local names = {}
         for k, v in pairs(full.params[1]) do if k ~= 'step' then names[#names + 1] = k end end
         table.sort(names)
         local need = {}
         for _, k in ipairs(opt1.required_state(opt1.groups[1])) do need[k] = true end
         if not case[1]:match('^SGD') then assert.is_true(#names >= 1 and next(need) ~= nil) end
         for _, k in ipairs(names) do
            local cut = opt1:state()
            cut.params[1][k] = nil
            local p2 = nn.Param(p1:tensor():detach() * 1)
            local opt2 = case[2]({p2})
            opt2:load_state(full)                          -- a complete state first: a refusal must keep it
            local ok, err = pcall(function() opt2:load_state(cut) end)
            if need[k] then
               assert.is_false(ok, k .. ' is needed but its absence loaded')
               assert.matches(('load_state: parameter 1 has stepped %%(step 2%%) but its state has no %s %%(an '
                               .. 'incomplete state'):format(k), err)
               assert.is_truthy(opt2:state().params[1][k], 'the refused load changed the state')
            else   -- SGD: a missing momentum buffer starts from the gradient, as PyTorch's does
               assert.is_true(ok, tostring(err))
            end
         end
      end)
   end
end)

describe('Lookahead and Ema', function()
   it('Lookahead moves the slow weights alpha of the way every k steps and resets the fast ones', function()
      local p = nn.Param(fnn.tensor(W0))
      local opt = optim.Lookahead(optim.SGD({p}, 0.1), 2, 0.5)
      local w, slow = copy(W0), copy(W0)
      for s = 1, 4 do
         p:set_grad(fnn.tensor(GRADS[s]))
         opt:step()
         for i = 1, #w do w[i] = w[i] - 0.1 * GRADS[s][i] end
         if s % 2 == 0 then
            for i = 1, #w do slow[i] = slow[i] + 0.5 * (w[i] - slow[i]); w[i] = slow[i] end
         end
         close(w, p:tensor():to_table(), 'Lookahead step ' .. s)
      end
      assert.equals(0.1, opt:lr())
      opt:set_lr(0.2)
      assert.equals(0.2, opt:lr())
   end)

   it('Lookahead state round-trips', function()
      local p1 = nn.Param(fnn.tensor(W0))
      local o1 = optim.Lookahead(optim.Adam({p1}, 0.01), 3, 0.5)
      for s = 1, 4 do p1:set_grad(fnn.tensor(GRADS[s])); o1:step() end
      local p2 = nn.Param(p1:tensor():detach() * 1)
      local o2 = optim.Lookahead(optim.Adam({p2}, 0.01), 3, 0.5)
      o2:load_state(o1:state())
      for s = 5, 7 do
         p1:set_grad(fnn.tensor(GRADS[s])); o1:step()
         p2:set_grad(fnn.tensor(GRADS[s])); o2:step()
         assert.same(p1:tensor():to_table(), p2:tensor():to_table())
      end
      assert.has_error(function() o2:load_state(optim.Adam({p2}, 0.01):state()) end)
   end)

   it('Ema averages the parameters and swaps them in and out for evaluation', function()
      local p = nn.Param(fnn.tensor(W0))
      local opt = optim.SGD({p}, 0.1)
      local ema = optim.Ema({p}, 0.9)
      local shadow = copy(W0)
      for s = 1, 3 do
         p:set_grad(fnn.tensor(GRADS[s]))
         opt:step()
         ema:update()
         local cur = p:tensor():to_table()
         for i = 1, #shadow do shadow[i] = 0.9 * shadow[i] + 0.1 * cur[i] end
      end
      local trained = p:tensor():to_table()
      ema:swap_in()
      close(shadow, p:tensor():to_table(), 'Ema swapped in')
      assert.has_error(function() ema:swap_in() end, 'optim.Ema: the averages are already swapped in')
      ema:swap_out()
      assert.same(trained, p:tensor():to_table())
      assert.has_error(function() ema:swap_out() end, 'optim.Ema: swap_out() without swap_in()')
      assert.has_error(function() optim.Ema({p}, 1.5) end)
   end)
end)

describe('schedules', function()
   local function near(want, got) assert(math.abs(want - got) < 1e-12, ('expected %.15g, got %.15g'):format(want, got)) end

   it('CosineAnnealing follows min + (base - min)(1 + cos(pi t / T)) / 2 and stays at min after T', function()
      local s = optim.CosineAnnealing(0.1, 100, {min = 0.001})
      for _, t in ipairs{0, 1, 25, 50, 99, 100} do
         near(0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * t / 100)) / 2, s:lr_at(t))
      end
      near(0.1, s:lr_at(0))
      near(0.001, s:lr_at(250))
      near(s:lr_at(30), s(30))
   end)

   it('Warmup ramps linearly to the inner rate, then runs the inner schedule (the FastNN seed)', function()
      local s = optim.Warmup(optim.CosineAnnealing(1e-3, 1000), 100)
      near(1e-3 * 1 / 100, s:lr_at(0))
      near(1e-3 * 50 / 100, s:lr_at(49))
      near(1e-3, s:lr_at(99))
      near(1e-3, s:lr_at(100))
      near(1e-3 * (1 + math.cos(math.pi * 400 / 1000)) / 2, s:lr_at(500))
      near(0, s:lr_at(1100))
      near(0.5 * 3 / 10, optim.Warmup(0.5, 10):lr_at(2))
   end)

   it('StepDecay and ExponentialDecay', function()
      local s = optim.StepDecay(0.1, 30, 0.5)
      near(0.1, s:lr_at(29)); near(0.05, s:lr_at(30)); near(0.025, s:lr_at(61))
      near(0.1 * 0.1 ^ 1, optim.StepDecay(0.1, 10):lr_at(10))
      local e = optim.ExponentialDecay(0.1, 100, 0.96)
      near(0.1 * 0.96 ^ 0.5, e:lr_at(50))
      near(0.1, optim.ExponentialDecay(0.1, 100, 0.96, {staircase = true}):lr_at(99))
      near(0.1 * 0.96, optim.ExponentialDecay(0.1, 100, 0.96, {staircase = true}):lr_at(150))
   end)

   it('OneCycle rises from max/div to max over pct_start, then falls to initial/final_div at the end', function()
      local s = optim.OneCycle(1.0, 100)                 -- peak at step 29
      local initial, final = 1 / 25, 1 / 25 / 1e4
      near(initial, s:lr_at(0))
      near(1.0, s:lr_at(29))
      near(final, s:lr_at(99))
      near(1.0 + (initial - 1.0) / 2 * (1 + math.cos(math.pi * (14 / 29))), s:lr_at(14))
      near(final + (1.0 - final) / 2 * (1 + math.cos(math.pi * (64 - 29) / (99 - 29))), s:lr_at(64))
      local lin = optim.OneCycle(1.0, 11, {pct_start = 0.5, anneal = 'linear'})   -- peak at 4.5
      near(initial + (1.0 - initial) * 2 / 4.5, lin:lr_at(2))
   end)

   it('ReduceOnPlateau cuts the rate after patience bad metrics, then cools down', function()
      local opt = optim.SGD({nn.Param(fnn.zeros(1))}, 1.0)
      local s = optim.ReduceOnPlateau(opt, {factor = 0.5, patience = 2, cooldown = 1})
      assert.equals(1.0, s:step(10))     -- best 10
      assert.equals(1.0, s:step(11))     -- bad 1
      assert.equals(1.0, s:step(12))     -- bad 2
      assert.equals(0.5, s:step(12))     -- bad 3 > patience: reduced, cooldown 1
      assert.equals(0.5, s:step(13))     -- in cooldown
      assert.equals(0.5, s:step(9))      -- improved: best 9
      assert.equals(0.5, opt:lr())
   end)

   it('apply sets the optimizer rate; bad steps and arguments are refused', function()
      local opt = optim.SGD({nn.Param(fnn.zeros(1))}, 1.0)
      local s = optim.StepDecay(0.1, 10, 0.5)
      s:apply(opt, 25)
      assert.equals(0.025, opt:lr())
      assert.has_error(function() s:lr_at(-1) end)
      assert.has_error(function() s:lr_at(1.5) end)
      assert.has_error(function() optim.CosineAnnealing(0.1, 0) end)
      assert.has_error(function() optim.OneCycle(1, 100, {anneal = 'exp'}) end)
   end)
end)

describe('refusals', function()
   local p = {nn.Param(fnn.ones(2))}
   it('name the optimizer and the bad value', function()
      for _, name in ipairs{'SGD', 'Adam', 'AdamW', 'RMSprop', 'Adagrad', 'Adadelta', 'RAdam', 'Lion'} do
         local ok, err = pcall(optim[name], p, -0.1)
         assert.is_false(ok)
         assert.matches('optim%.' .. name .. ': invalid learning rate %-0%.1', err)
      end
      for _, name in ipairs{'Adam', 'AdamW', 'RAdam', 'Lion'} do
         local ok, err = pcall(optim[name], p, {betas = {0.9, 1.0}})
         assert.is_false(ok)
         assert.matches('optim%.' .. name .. ': betas must be {b1, b2} with each in %[0, 1%)', err)
         ok = pcall(optim[name], p, {betas = {-0.1, 0.9}})
         assert.is_false(ok)
      end
      assert.has_error(function() optim.RMSprop(p, 0.01, {alpha = 1.5}) end)
      assert.has_error(function() optim.Adadelta(p, 1, {rho = -0.5}) end)
      assert.has_error(function() optim.Adagrad(p, 0.1, {initial_accumulator_value = -1}) end)
      assert.has_error(function() optim.Lookahead(optim.SGD(p, 0.1), 0) end)
   end)

   it('bind unbound optimizers later, with per-group options', function()
      local a, b = nn.Param(fnn.tensor{1, 1}), nn.Param(fnn.tensor{1, 1})
      local opt = optim.RMSprop{lr = 0.1}
      opt:bind({{params = {a}, weight_decay = 0.5}, {params = {b}}})
      a:set_grad(fnn.tensor{0, 0})
      b:set_grad(fnn.tensor{0, 0})
      opt:step()
      assert.are_not.same({1, 1}, a:tensor():to_table())       -- decay alone moved a
      assert.same({1, 1}, b:tensor():to_table())
   end)
end)
