-- Activations: the C unary ops (leaky_relu elu selu celu mish hardsigmoid hardswish softsign) and
-- every activation layer, against their formulas written here in Lua doubles, on negative inputs,
-- large magnitudes and non-contiguous views; gradients against the formulas' derivatives (the
-- finite-difference checks are spec/cases/elementwise.lua); nn.Activation and nn.activation_fn.
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local approx, err_of = support.approx, support.err_of

local SCALE, ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
local function expm1(v) return math.exp(v) - 1 end   -- doubles: exact enough at 1e-5
local function softplus(v) return v > 30 and v or math.log(1 + math.exp(v)) end
local function sigmoid(v) return 1 / (1 + math.exp(-v)) end
local function hsig(v) return math.min(math.max(v + 3, 0), 6) / 6 end

-- name -> {forward(v), derivative(v)}; k is the op's number where it takes one
local REF = {
   leaky_relu = {function(v, k) return v > 0 and v or k * v end, function(v, k) return v > 0 and 1 or k end},
   elu = {function(v, k) return v > 0 and v or k * expm1(v) end, function(v, k) return v > 0 and 1 or k * math.exp(v) end},
   selu = {function(v) return SCALE * (v > 0 and v or ALPHA * expm1(v)) end,
           function(v) return SCALE * (v > 0 and 1 or ALPHA * math.exp(v)) end},
   celu = {function(v, k) return v > 0 and v or k * expm1(v / k) end,
           function(v, k) return v > 0 and 1 or math.exp(v / k) end},
   mish = {function(v) return v * math.tanh(softplus(v)) end,
           function(v)
              local t = math.tanh(softplus(v))
              return t + v * sigmoid(v) * (1 - t * t)
           end},
   hardsigmoid = {hsig, function(v) return (v > -3 and v < 3) and 1 / 6 or 0 end},
   hardswish = {function(v) return v * hsig(v) end,
                function(v) return v < -3 and 0 or (v > 3 and 1 or (2 * v + 3) / 6) end},
   softsign = {function(v) return v / (1 + math.abs(v)) end, function(v) return 1 / (1 + math.abs(v)) ^ 2 end},
}
local NUMBER = {leaky_relu = 0.2, elu = 1.5, celu = 0.7}

-- negative and positive values, tiny and large magnitudes, both sides of the hard kinks (+-3)
local VALUES = {-90, -40, -17.5, -8, -3.5, -3.01, -2.99, -2, -1, -0.5, -0.1, -1e-3, -1e-6, 0, 1e-6, 1e-3, 0.1,
                0.5, 1, 2, 2.99, 3.01, 3.5, 8, 17.5, 40, 90}

local function map(f, k, vals)
   local r = {}
   for i, v in ipairs(vals or VALUES) do r[i] = f(v, k) end
   return r
end

describe('activation ops', function()
   for name, ref in pairs(REF) do
      local k = NUMBER[name]
      it(name .. ' matches its formula on negative, tiny and large inputs', function()
         local x = fnn.tensor(VALUES)
         local y = k and x[name](x, k) or x[name](x)
         assert.same(x:shape(), y:shape())
         -- relative above 1, absolute below: tiny outputs (elu(-1e-6)) are checked to 1e-11
         approx(map(ref[1], k), y, 1e-5)
         local tiny = y:to_flat()
         for i, v in ipairs(VALUES) do
            if math.abs(v) <= 1e-3 then
               local e = ref[1](v, k)
               assert.is_true(math.abs(tiny[i] - e) <= 1e-5 * math.abs(e) + 1e-30,
                              ('%s(%g): expected %.9g got %.9g'):format(name, v, e, tiny[i]))
            end
         end
         -- the fnn function is the same op
         approx(map(ref[1], k), k and fnn[name](x, k) or fnn[name](x), 1e-5)
      end)

      it(name .. ' is right on a large non-contiguous input (vector and strided rows)', function()
         fnn.manual_seed(3)
         local x = fnn.randn(37, 24) * 4
         local xt = x:t()                              -- [24, 37], strided
         local y = k and xt[name](xt, k) or xt[name](xt)
         assert.same({24, 37}, y:shape())
         approx(map(ref[1], k, xt:contiguous():to_flat()), y, 1e-5)
      end)

      it(name .. ' has the derivative of its formula, large magnitudes included', function()
         local vals = {}
         for i, v in ipairs(VALUES) do if v ~= 0 then vals[#vals + 1] = v end end
         local p = nn.Param(fnn.tensor(vals))
         local x = p:tensor()
         local y = k and x[name](x, k) or x[name](x)
         y:sum():backward()
         approx(map(ref[2], k, vals), p:grad(), 1e-5)
      end)
   end

   it('refuses a number argument of the wrong type or value, naming the op', function()
      local x = fnn.randn(3)
      assert.matches('activation_spec%.lua:%d+: leaky_relu: negative_slope is a string, expected a number',
                     err_of(function() x:leaky_relu('0.1') end))
      assert.matches('elu: alpha is a table, expected a number', err_of(function() x:elu{} end))
      assert.matches('celu: alpha is 0, expected a finite non%-zero number', err_of(function() x:celu(0) end))
      assert.matches('leaky_relu: negative_slope is inf', err_of(function() x:leaky_relu(math.huge) end))
      assert.matches('selu: expected a float32 tensor, got an int64 tensor', err_of(function() fnn.long{1, 2}:selu() end))
   end)

   it('uses the PyTorch defaults: slope 0.01, alpha 1', function()
      local x = fnn.tensor{-2, 3}
      approx({-0.02, 3}, x:leaky_relu())
      approx({expm1(-2), 3}, x:elu())
      approx({expm1(-2), 3}, x:celu())
   end)
end)

describe('activation layers', function()
   local x = fnn.tensor{{-20, -3.5, -1.2, -0.3}, {0, 0.4, 2.5, 30}}
   local function ref(f) return map(f, nil, x:to_flat()) end
   local layers = {
      ReLU = function(v) return math.max(v, 0) end,
      LeakyReLU = function(v) return v > 0 and v or 0.01 * v end,
      ELU = function(v) return REF.elu[1](v, 1) end,
      SELU = REF.selu[1],
      GELU = function(v) return 0.5 * v * (1 + (math.abs(v) < 6 and support.erf(v / math.sqrt(2)) or (v > 0 and 1 or -1))) end,
      SiLU = function(v) return v * sigmoid(v) end,
      Swish = function(v) return v * sigmoid(v) end,
      Mish = REF.mish[1],
      Sigmoid = sigmoid,
      HardSigmoid = hsig,
      Tanh = math.tanh,
      Softplus = softplus,
      Softsign = REF.softsign[1],
   }
   for name, f in pairs(layers) do
      it(name .. ' matches its formula, keeps the shape and prints its name', function()
         local m = nn[name]()
         local y = m(x)
         assert.same({2, 4}, y:shape())
         approx(ref(f), y, 1e-5)
         assert.matches('^nn%.' .. name, tostring(m))
         assert.matches('^nn%.' .. name, m:short_str())
         assert.same({}, m:parameters())
         assert.matches(name .. ': input is a string, expected a tensor', err_of(function() m('x') end))
      end)
   end

   it('LeakyReLU takes the slope as a number or {negative_slope}', function()
      approx(ref(function(v) return v > 0 and v or 0.2 * v end), nn.LeakyReLU(0.2)(x))
      approx(ref(function(v) return v > 0 and v or 0.3 * v end), nn.LeakyReLU{negative_slope = 0.3}(x))
      assert.equals('nn.LeakyReLU(0.2)', tostring(nn.LeakyReLU(0.2)))
      assert.equals('nn.LeakyReLU(0.01)', tostring(nn.LeakyReLU()))
      assert.matches('activation_spec%.lua:%d+: nn%.LeakyReLU: negative_slope is 0%.1 %(a string%), expected a finite number',
                     err_of(function() nn.LeakyReLU('0.1') end))
      assert.matches('nn%.LeakyReLU: negative_slope is true, expected a number',
                     err_of(function() nn.LeakyReLU{negative_slope = true} end))
   end)

   it('ELU takes alpha as a number or {alpha}', function()
      approx(ref(function(v) return REF.elu[1](v, 2) end), nn.ELU(2)(x))
      approx(ref(function(v) return REF.elu[1](v, 0.5) end), nn.ELU{alpha = 0.5}(x))
      assert.equals('nn.ELU(alpha=2)', tostring(nn.ELU(2)))
      assert.matches('nn%.ELU: alpha is nan', err_of(function() nn.ELU(0 / 0) end))
   end)

   it('GELU{approximate = "tanh"} is the tanh form', function()
      local c = math.sqrt(2 / math.pi)
      approx(ref(function(v) return 0.5 * v * (1 + math.tanh(c * (v + 0.044715 * v ^ 3))) end),
             nn.GELU{approximate = 'tanh'}(x), 1e-5)
   end)

   it('Softmax and LogSoftmax work along dim (default -1), against a naive loop', function()
      fnn.manual_seed(4)
      local z = fnn.randn(2, 3, 4) * 3
      local zs = z:to_table()
      local function naive(dim, log)
         return support.build({2, 3, 4}, function(idx)
            local s, j = 0, {idx[1], idx[2], idx[3]}
            for k = 1, ({2, 3, 4})[dim] do
               j[dim] = k
               s = s + math.exp(zs[j[1]][j[2]][j[3]])
            end
            local v = zs[idx[1]][idx[2]][idx[3]]
            return log and v - math.log(s) or math.exp(v) / s
         end)
      end
      approx(naive(3), nn.Softmax()(z))
      approx(naive(3, true), nn.LogSoftmax()(z))
      approx(naive(2), nn.Softmax(2)(z))
      approx(naive(1, true), nn.LogSoftmax{dim = 1}(z))
      approx(naive(2, true), nn.LogSoftmax(-2)(z))
      assert.equals('nn.Softmax(dim=-1)', tostring(nn.Softmax()))
      assert.equals('nn.LogSoftmax(dim=2)', tostring(nn.LogSoftmax(2)))
      assert.matches('activation_spec%.lua:%d+: Softmax%(dim=4%): input %[2,3,4%] has no dim 4',
                     err_of(function() nn.Softmax(4)(z) end))
      assert.matches('nn%.LogSoftmax: dim is 0', err_of(function() nn.LogSoftmax(0) end))
   end)

   it('passes gradients through every layer (finite differences)', function()
      for _, m in ipairs{nn.LeakyReLU(0.2), nn.ELU(1.3), nn.SELU(), nn.Mish(), nn.HardSigmoid(), nn.Softsign(),
                         nn.Swish(), nn.Softmax(1), nn.LogSoftmax()} do
         fnn.manual_seed(5)
         local z = fnn.rand(3, 4) * 2 + 0.1    -- away from the kinks at 0 and +-3
         local signs = fnn.tensor{{1, -1, 1, -1}, {-1, 1, -1, 1}, {1, 1, -1, -1}}
         local ok, report = fnn.gradcheck(function(a) return m(a) end, {z * signs})
         assert(ok, tostring(m) .. ':\n' .. tostring(report))
      end
   end)
end)

describe('nn.Activation and nn.activation_fn', function()
   fnn.manual_seed(6)
   local x = fnn.randn(3, 5) * 3
   local same_as = {
      relu = nn.ReLU(), leaky_relu = nn.LeakyReLU(), elu = nn.ELU(), selu = nn.SELU(), gelu = nn.GELU(),
      silu = nn.SiLU(), swish = nn.SiLU(), mish = nn.Mish(), sigmoid = nn.Sigmoid(), hard_sigmoid = nn.HardSigmoid(),
      tanh = nn.Tanh(), softplus = nn.Softplus(), softsign = nn.Softsign(), softmax = nn.Softmax(-1),
      log_softmax = nn.LogSoftmax(-1), linear = nn.Identity(),
   }
   for name, layer in pairs(same_as) do
      it(("'%s' gives the layer %s"):format(name, tostring(layer)), function()
         local want = layer(x):to_flat()
         approx(want, nn.Activation(name)(x))
         approx(want, nn.activation_fn(name)(x))
         assert.equals(("nn.Activation('%s')"):format(name), tostring(nn.Activation(name)))
      end)
   end

   it('takes nil as the identity and a function as it is', function()
      assert.equals(x, nn.activation_fn(nil)(x))
      local f = function(t) return t * 2 end
      assert.equals(f, nn.activation_fn(f))
   end)

   it('refuses an unknown name, listing the known ones, at the caller line', function()
      local err = err_of(function() nn.Activation('rleu') end)
      assert.matches("activation_spec%.lua:%d+: nn%.Activation: unknown activation 'rleu' %(known: ", err)
      for _, name in ipairs{'relu', 'leaky_relu', 'elu', 'selu', 'gelu', 'silu', 'swish', 'mish', 'sigmoid',
                            'hard_sigmoid', 'tanh', 'softplus', 'softsign', 'softmax', 'log_softmax', 'linear'} do
         assert.matches('[ (]' .. name .. '[,)]', err)
      end
      assert.matches("activation_spec%.lua:%d+: activation: unknown activation 'foo'",
                     err_of(function() nn.activation_fn('foo') end))
      assert.matches("nn%.Dense: unknown activation 'foo'", err_of(function() nn.activation_fn('foo', 1, 'nn.Dense') end))
      assert.matches('nn%.Activation: name is a number', err_of(function() nn.Activation(3) end))
   end)
end)
