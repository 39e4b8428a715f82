-- The fused optimizer kernels of core/optim.c through the raw FFI: three
-- steps of SGD (momentum, dampening, nesterov, weight decay) and Adam/AdamW
-- against updates computed here in doubles, the gradient helpers, and the
-- refusals. (optim/*.lua builds the user-facing optimizers on these.)
local fnn = require 'fastnn'
local ffi = require 'ffi'
local C = require 'fastnn.C'

local function approx(expected, got, tol)
   assert.equals(#expected, #got)
   for i = 1, #expected do
      assert.is_true(math.abs(expected[i] - got[i]) <= (tol or 1e-5) * math.max(1, math.abs(expected[i])),
                     ('element %d: expected %.8g got %.8g'):format(i, expected[i], got[i]))
   end
end

local function ok(rc) assert.equals(0, rc, rc ~= 0 and ffi.string(C.fnn_last_error()) or nil) end

-- a Param with a given value and gradient
local function param(value, grad)
   local p = fnn.Param(fnn.tensor(value))
   if grad then p:set_grad(fnn.tensor(grad)) end
   return p
end

local function sgd_ref(w, g, buf, o, first)
   for i = 1, #w do
      local d = g[i] + o.wd * w[i]
      if o.momentum ~= 0 then
         buf[i] = first and d or o.momentum * buf[i] + (1 - o.dampening) * d
         d = o.nesterov and d + o.momentum * buf[i] or buf[i]
      end
      w[i] = w[i] - o.lr * d
   end
end

local function adam_ref(w, g, m, v, o, t)
   for i = 1, #w do
      local gi = g[i]
      if o.decoupled then w[i] = w[i] * (1 - o.lr * o.wd) else gi = gi + o.wd * w[i] end
      m[i] = o.b1 * m[i] + (1 - o.b1) * gi
      v[i] = o.b2 * v[i] + (1 - o.b2) * gi * gi
      w[i] = w[i] - o.lr / (1 - o.b1 ^ t) * m[i] / (math.sqrt(v[i]) / math.sqrt(1 - o.b2 ^ t) + o.eps)
   end
end

describe('optim kernels: sgd', function()
   local grads = {{0.5, -1, 2, 0.25}, {0.1, 0.3, -0.7, 1}, {-2, 0.5, 0.5, 0}}

   for _, o in ipairs{
      {lr = 0.1, momentum = 0, dampening = 0, wd = 0, nesterov = false},
      {lr = 0.05, momentum = 0.9, dampening = 0.1, wd = 0.01, nesterov = false},
      {lr = 0.05, momentum = 0.8, dampening = 0, wd = 0.1, nesterov = true},
   } do
      it(('three steps match (momentum %g, nesterov %s, wd %g)'):format(o.momentum, o.nesterov, o.wd), function()
         local w = {1, -2, 3, 0.5}
         local p = param(w)
         local buf = fnn.zeros(4)
         local ref_w, ref_buf = {1, -2, 3, 0.5}, {0, 0, 0, 0}
         for step = 1, 3 do
            p:set_grad(fnn.tensor(grads[step]))
            ok(C.fnn_optim_sgd(p.node, buf, o.lr, o.momentum, o.dampening, o.wd, o.nesterov and 1 or 0,
                               step == 1 and 1 or 0))
            sgd_ref(ref_w, grads[step], ref_buf, o, step == 1)
            approx(ref_w, p:tensor():to_flat())
            if o.momentum ~= 0 then approx(ref_buf, buf:to_flat()) end
         end
      end)
   end

   it('does nothing without a gradient', function()
      local p = param({1, 2})
      ok(C.fnn_optim_sgd(p.node, nil, 0.1, 0, 0, 0, 0, 1))
      approx({1, 2}, p:tensor():to_flat())
   end)

   it('reads an expanded gradient (from sum) and updates a big param seen by earlier tensors', function()
      local p = fnn.Param(fnn.ones(40))
      local before = p:tensor()
      p:tensor():sum():backward()
      ok(C.fnn_optim_sgd(p.node, nil, 0.5, 0, 0, 0, 0, 1))
      local want = {}
      for i = 1, 40 do want[i] = 0.5 end
      approx(want, p:tensor():to_flat())
      approx(want, before:to_flat())   -- in place on the Param's value, as PyTorch
   end)

   it('refuses momentum without a buffer, and a buffer of the wrong shape', function()
      local p = param({1, 2}, {1, 1})
      assert.is_true(C.fnn_optim_sgd(p.node, nil, 0.1, 0.9, 0, 0, 0, 1) ~= 0)
      assert.matches('sgd: momentum 0.9 needs a momentum buffer', ffi.string(C.fnn_last_error()))
      assert.is_true(C.fnn_optim_sgd(p.node, fnn.zeros(3), 0.1, 0.9, 0, 0, 0, 1) ~= 0)
      assert.matches('sgd: momentum buffer %[3%] does not match param %[2%]', ffi.string(C.fnn_last_error()))
   end)
end)

describe('optim kernels: adam', function()
   local grads = {{0.5, -1, 2, 0.25, 0, 3}, {0.1, 0.3, -0.7, 1, 0, -3}, {-2, 0.5, 0.5, 0, 0, 1e-3}}

   for _, o in ipairs{
      {lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0, decoupled = false},
      {lr = 1e-2, b1 = 0.8, b2 = 0.99, eps = 1e-6, wd = 0.1, decoupled = false},
      {lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.05, decoupled = true},
   } do
      it(('three steps match (%s, wd %g)'):format(o.decoupled and 'AdamW' or 'Adam', o.wd), function()
         local w = {1, -2, 3, 0.5, 0.25, -1}
         local p = param(w)
         local m, v = fnn.zeros(6), fnn.zeros(6)
         local rw, rm, rv = {1, -2, 3, 0.5, 0.25, -1}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}
         for step = 1, 3 do
            p:set_grad(fnn.tensor(grads[step]))
            ok(C.fnn_optim_adam(p.node, m, v, nil, o.lr, o.b1, o.b2, o.eps, o.wd, o.decoupled and 1 or 0, step))
            adam_ref(rw, grads[step], rm, rv, o, step)
            approx(rw, p:tensor():to_flat())
            approx(rm, m:to_flat())
            approx(rv, v:to_flat())
         end
      end)
   end

   it('the first step moves each weight by about lr against the gradient sign', function()
      local p = param({0, 0, 0}, {3, -0.01, 100})
      ok(C.fnn_optim_adam(p.node, fnn.zeros(3), fnn.zeros(3), nil, 0.1, 0.9, 0.999, 1e-8, 0, 0, 1))
      approx({-0.1, 0.1, -0.1}, p:tensor():to_flat(), 1e-4)
   end)

   it('covers the vector lanes and the tail alike (odd sizes)', function()
      for _, n in ipairs{1, 3, 4, 5, 17, 4099} do
         local w, g = {}, {}
         for i = 1, n do w[i] = math.sin(i); g[i] = math.cos(3 * i) end
         local p = param(w, g)
         local o = {lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01, decoupled = true}
         ok(C.fnn_optim_adam(p.node, fnn.zeros(n), fnn.zeros(n), nil, o.lr, o.b1, o.b2, o.eps, o.wd, 1, 1))
         local m, v = {}, {}
         for i = 1, n do m[i] = 0; v[i] = 0 end
         adam_ref(w, g, m, v, o, 1)
         approx(w, p:tensor():to_flat())
      end
   end)

   -- fnn_optim_adam_many: the parameters' chunks numbered across tensors in one parallel loop. Sizes on
   -- both sides of the 4096-element chunk and of the team's split, each at its own step, one without a
   -- gradient (skipped), amsgrad on and off: each equals the naive rule, and the single-parameter call
   local function many_case(amsgrad)
      local sizes, steps = {1, 4095, 4096, 4097, 3, 70000, 5, 8193}, {1, 2, 3, 1, 7, 2, 1, 4}
      local ps, ms, vs, xs, refs = {}, {}, {}, {}, {}
      local nodes, m, v = ffi.new('fnn_node *[?]', #sizes), ffi.new('fnn_tensor *[?]', #sizes),
         ffi.new('fnn_tensor *[?]', #sizes)
      local vmax, st = amsgrad and ffi.new('fnn_tensor *[?]', #sizes) or nil, ffi.new('int64_t[?]', #sizes)
      local o = {lr = 1e-2, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.02, decoupled = true}
      for k, n in ipairs(sizes) do
         local w, g = {}, {}
         for i = 1, n do w[i] = math.sin(i + k); g[i] = math.cos(3 * i - k) end
         ps[k] = k == 5 and fnn.Param(fnn.tensor(w)) or param(w, g)   -- parameter 5: no gradient
         ms[k], vs[k], xs[k] = fnn.full({n}, 0.1), fnn.full({n}, 0.2), fnn.full({n}, 0.3)
         nodes[k - 1], m[k - 1], v[k - 1], st[k - 1] = ps[k].node, ms[k], vs[k], steps[k]
         if vmax then vmax[k - 1] = xs[k] end
         local rm, rv = {}, {}
         for i = 1, n do rm[i] = 0.1; rv[i] = 0.2 end
         if k ~= 5 then adam_ref(w, g, rm, rv, o, steps[k]) end
         refs[k] = {w = w, m = rm}
      end
      ok(C.fnn_optim_adam_many(#sizes, nodes, m, v, vmax, o.lr, o.b1, o.b2, o.eps, o.wd, 1, st))
      return ps, ms, refs
   end

   it('many parameters in one call: each as the rule says, a parameter without a gradient untouched', function()
      local ps, ms, refs = many_case(false)
      for k = 1, #ps do
         approx(refs[k].w, ps[k]:tensor():to_flat())
         approx(refs[k].m, ms[k]:to_flat())
      end
   end)

   it('many parameters in one call, amsgrad: bit for bit the single-parameter calls', function()
      local ps, ms = many_case(true)
      -- the same start again, one call per parameter
      local sizes, steps = {1, 4095, 4096, 4097, 3, 70000, 5, 8193}, {1, 2, 3, 1, 7, 2, 1, 4}
      for k, n in ipairs(sizes) do
         local w, g = {}, {}
         for i = 1, n do w[i] = math.sin(i + k); g[i] = math.cos(3 * i - k) end
         local p = k == 5 and fnn.Param(fnn.tensor(w)) or param(w, g)
         local m1 = fnn.full({n}, 0.1)
         ok(C.fnn_optim_adam(p.node, m1, fnn.full({n}, 0.2), fnn.full({n}, 0.3), 1e-2, 0.9, 0.99, 1e-8, 0.02, 1, steps[k]))
         assert.same(p:tensor():to_flat(), ps[k]:tensor():to_flat())
         assert.same(m1:to_flat(), ms[k]:to_flat())
      end
   end)

   it('many parameters in one call: checked before any is updated, the error naming the bad one', function()
      local a, b = param({1, 2}, {1, 1}), param({3, 4, 5}, {1, 1, 1})
      local nodes = ffi.new('fnn_node *[2]', {a.node, b.node})
      local m = ffi.new('fnn_tensor *[2]', {fnn.zeros(2), fnn.zeros(3)})
      local v = ffi.new('fnn_tensor *[2]', {fnn.zeros(2), fnn.zeros(4)})
      assert.is_true(C.fnn_optim_adam_many(2, nodes, m, v, nil, 0.1, 0.9, 0.999, 1e-8, 0, 0,
                                           ffi.new('int64_t[2]', {1, 1})) ~= 0)
      assert.matches('adam: second moment %[4%] does not match param %[3%]', ffi.string(C.fnn_last_error()))
      approx({1, 2}, a:tensor():to_flat())
      assert.is_true(C.fnn_optim_adam_many(2, nodes, m, m, nil, 0.1, 0.9, 0.999, 1e-8, 0, 0,
                                           ffi.new('int64_t[2]', {1, 0})) ~= 0)
      assert.matches('adam: step 0, steps count from 1', ffi.string(C.fnn_last_error()))
      approx({1, 2}, a:tensor():to_flat())
   end)

   it('refuses step 0 and moments of the wrong shape', function()
      local p = param({1, 2}, {1, 1})
      assert.is_true(C.fnn_optim_adam(p.node, fnn.zeros(2), fnn.zeros(2), nil, 0.1, 0.9, 0.999, 1e-8, 0, 0, 0) ~= 0)
      assert.matches('adam: step 0, steps count from 1', ffi.string(C.fnn_last_error()))
      assert.is_true(C.fnn_optim_adam(p.node, fnn.zeros(2), fnn.zeros(2, 1), nil, 0.1, 0.9, 0.999, 1e-8, 0, 0, 1) ~= 0)
      assert.matches('adam: second moment %[2,1%] does not match param %[2%]', ffi.string(C.fnn_last_error()))
      approx({1, 2}, p:tensor():to_flat())
   end)
end)

describe('optim kernels: gradient helpers', function()
   it('grad_all_finite: 1 without a gradient or with a finite one, 0 with inf or nan', function()
      assert.equals(1, C.fnn_grad_all_finite(param({1, 2}).node))
      assert.equals(1, C.fnn_grad_all_finite(param({1, 2}, {3, -4}).node))
      assert.equals(0, C.fnn_grad_all_finite(param({1, 2}, {1, math.huge}).node))
      assert.equals(0, C.fnn_grad_all_finite(param({1, 2}, {-math.huge, 1}).node))
      assert.equals(0, C.fnn_grad_all_finite(param({1, 2}, {0 / 0, 1}).node))
   end)

   it('grad_sq_norm: the sum of squares, 0 without a gradient', function()
      assert.equals(0, C.fnn_grad_sq_norm(param({1, 2}).node))
      assert.is_true(math.abs(C.fnn_grad_sq_norm(param({1, 2, 3, 4, 5}, {3, -4, 1, 2, 0.5}).node) - 30.25) < 1e-9)
   end)

   it('grad_scale: a fresh scaled gradient; one Lua already holds is untouched', function()
      local p = param({1, 2, 3}, {2, -4, 6})
      local held = p:grad()
      ok(C.fnn_grad_scale(p.node, 0.5))
      approx({1, -2, 3}, p:grad():to_flat())
      approx({2, -4, 6}, held:to_flat())
      ok(C.fnn_grad_scale(param({1}).node, 2))   -- no gradient: nothing to do
   end)
end)
