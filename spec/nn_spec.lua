-- nn: Module, layers and loss functions, against naive Lua loops written here.
local fnn = require 'fastnn'
local nn = fnn.nn

local approx = require('support').approx

local function names_of(pairs_list)
   local r = {}
   for i, p in ipairs(pairs_list) do r[i] = p[1] end
   return r
end

-- y[r][o] = sum_k x[r][k] * w[o][k] + b[o], rows of x taken flat over the leading dims
local function naive_linear(x, w, b)
   local xs, ws, bs = x:to_flat(), w:to_table(), b and b:to_flat()
   local outs, ins = #ws, #ws[1]
   local rows = #xs / ins
   local y = {}
   for r = 0, rows - 1 do
      for o = 1, outs do
         local s = bs and bs[o] or 0
         for k = 1, ins do s = s + xs[r * ins + k] * ws[o][k] end
         y[#y + 1] = s
      end
   end
   return y
end

describe('nn.Linear', function()
   it('computes x w^T + b like a naive loop, on 2-D and 3-D inputs', function()
      fnn.manual_seed(1)
      local lin = nn.Linear(4, 3)
      local x = fnn.randn(5, 4)
      local y = lin(x)
      assert.same({5, 3}, y:shape())
      approx(naive_linear(x, lin.weight:tensor(), lin.bias:tensor()), y)
      local x3 = fnn.randn(2, 3, 4)
      local y3 = lin:forward(x3)
      assert.same({2, 3, 3}, y3:shape())
      approx(naive_linear(x3, lin.weight:tensor(), lin.bias:tensor()), y3)
   end)

   it('has weight [out, in] and bias [out] drawn from U(-1/sqrt(in), 1/sqrt(in))', function()
      fnn.manual_seed(2)
      local lin = nn.Linear(100, 30)
      assert.same({30, 100}, lin.weight:shape())
      assert.same({30}, lin.bias:shape())
      local bound = 1 / math.sqrt(100)
      local w = lin.weight:tensor():to_flat()
      local lo, hi = math.huge, -math.huge
      for _, v in ipairs(w) do lo, hi = math.min(lo, v), math.max(hi, v) end
      assert.is_true(lo >= -bound and hi <= bound)
      assert.is_true(lo < -0.9 * bound and hi > 0.9 * bound)   -- spread over the whole range
      for _, v in ipairs(lin.bias:tensor():to_flat()) do assert.is_true(math.abs(v) <= bound) end
   end)

   it('works without a bias ({bias = false})', function()
      local lin = nn.Linear(3, 2, {bias = false})
      assert.is_nil(lin.bias)
      assert.same({'weight'}, names_of(lin:named_parameters()))
      local x = fnn.randn(4, 3)
      approx(naive_linear(x, lin.weight:tensor()), lin(x))
      assert.equals('nn.Linear(3 -> 2, no bias)', tostring(lin))
   end)

   it('names both sizes and the input shape when the input does not fit', function()
      local lin = nn.Linear(4, 3)
      local ok, err = pcall(function() lin:forward(fnn.randn(2, 5)) end)
      assert.is_false(ok)
      assert.matches('nn_spec%.lua:%d+: Linear%(4 %-> 3%): input %[2,5%] has 5 features in its last dim', err)
      ok, err = pcall(function() lin(3) end)
      assert.matches('Linear%(4 %-> 3%): input is a number, expected a tensor', err)
      assert.has_error(function() nn.Linear(-1, 2) end)
   end)

   it('propagates gradients to weight and bias', function()
      local lin = nn.Linear(3, 2)
      local x = fnn.randn(4, 3)
      lin(x):sum():backward()
      -- d sum(x w^T + b) / dw[o][k] = sum_r x[r][k];  / db[o] = rows
      local xs = x:to_table()
      local colsum = {0, 0, 0}
      for r = 1, 4 do for k = 1, 3 do colsum[k] = colsum[k] + xs[r][k] end end
      approx({colsum[1], colsum[2], colsum[3], colsum[1], colsum[2], colsum[3]}, lin.weight:grad(), 1e-4)
      approx({4, 4}, lin.bias:grad())
   end)
end)

describe('activation layers', function()
   local x = fnn.tensor{{-2.5, -0.3, 0}, {0.4, 1.2, 3.0}}
   local function map(f)
      local r = {}
      for i, v in ipairs(x:to_flat()) do r[i] = f(v) end
      return r
   end
   local function erf(v)   -- power series, fine for |v| < 3
      local s, term, n = v, v, 0
      repeat
         n = n + 1
         term = -term * v * v / n
         s = s + term / (2 * n + 1)
      until math.abs(term) < 1e-13
      return 2 / math.sqrt(math.pi) * s
   end
   local refs = {
      ReLU = function(v) return v > 0 and v or 0 end,
      Tanh = math.tanh,
      Sigmoid = function(v) return 1 / (1 + math.exp(-v)) end,
      SiLU = function(v) return v / (1 + math.exp(-v)) end,
      Softplus = function(v) return math.log(1 + math.exp(v)) end,
      GELU = function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end,
      Identity = function(v) return v end,
   }
   for name, f in pairs(refs) do
      it(name .. ' matches its formula and keeps the shape', function()
         local y = nn[name]()(x)
         assert.same({2, 3}, y:shape())
         approx(map(f), y)
      end)
   end
   it('GELU{approximate = "tanh"} and Softplus{beta = 2}', function()
      approx(map(function(v) return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3))) end),
             nn.GELU{approximate = 'tanh'}(x))
      approx(map(function(v) return math.log(1 + math.exp(2 * v)) / 2 end), nn.Softplus{beta = 2}(x))
   end)
   it('refuses a non-tensor input naming the layer', function()
      local ok, err = pcall(function() nn.ReLU()({1, 2}) end)
      assert.matches('ReLU: input is a table, expected a tensor', err)
   end)
end)

describe('nn.Flatten', function()
   it('keeps the batch dim and merges the rest', function()
      local x = fnn.randn(2, 3, 4, 5)
      local y = nn.Flatten()(x)
      assert.same({2, 60}, y:shape())
      assert.same(x:to_flat(), y:to_flat())
      assert.same({2, 3, 20}, nn.Flatten{start_dim = 3}(x):shape())
      assert.same({0, 12}, nn.Flatten()(fnn.zeros(0, 3, 4)):shape())
   end)
   it('works on a non-contiguous input', function()
      local x = fnn.randn(3, 4, 2)
      local xt = x:transpose(2, 3)            -- [3, 2, 4], not contiguous
      local y = nn.Flatten()(xt)
      assert.same({3, 8}, y:shape())
      assert.same(xt:contiguous():to_flat(), y:to_flat())
   end)
   it('refuses an input with no dims after the batch dim', function()
      local ok, err = pcall(function() nn.Flatten()(fnn.randn(5)) end)
      assert.matches('Flatten: dims 2%.%.%-1 out of range for input %[5%]', err)
   end)
end)

describe('nn.Sequential', function()
   it('chains its children in order', function()
      local l1, l2 = nn.Linear(4, 3), nn.Linear(3, 2)
      local m = nn.Sequential(l1, nn.Tanh(), l2)
      local x = fnn.randn(5, 4)
      approx(l2(l1(x):tanh()):to_flat(), m(x))
      local m2 = nn.Sequential():add(l1):add(nn.Tanh()):add(l2)
      approx(m(x):to_flat(), m2(x))
      assert.equals(3, m2:len())
   end)

   it('names parameters by 1-based position, nested with dots, in order', function()
      local m = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
      assert.same({'2.weight', '2.bias', '4.weight', '4.bias'}, names_of(m:named_parameters()))
      assert.equals(784 * 128 + 128 + 128 * 10 + 10, m:num_parameters())
      local outer = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2, {bias = false})), nn.Linear(2, 1))
      assert.same({'1.1.weight', '1.1.bias', '1.2.weight', '2.weight', '2.bias'},
                  names_of(outer:named_parameters()))
      assert.equals(5, #outer:parameters())
      assert.equals(2, #outer:children())
   end)

   it('re-raises a child error prefixed with its position and name, at the caller line', function()
      local m = nn.Sequential(nn.Flatten(), nn.Identity(), nn.Linear(784, 128), nn.ReLU())
      local ok, err = pcall(function() m(fnn.randn(8, 100)) end)
      assert.is_false(ok)
      assert.matches('^[^\n]*nn_spec%.lua:%d+: Sequential%[3%] nn%.Linear%(784 %-> 128%): '
                     .. 'Linear%(784 %-> 128%): input %[8,100%] has 100 features in its last dim$', err)
      -- nested containers keep every prefix
      local outer = nn.Sequential(nn.Identity(), m)
      ok, err = pcall(function() outer:forward(fnn.randn(8, 100)) end)
      assert.matches('Sequential%[2%] nn%.Sequential: Sequential%[3%] nn%.Linear%(784 %-> 128%):', err)
   end)

   it('refuses a non-module child', function()
      assert.has_error(function() nn.Sequential(nn.ReLU(), 3) end,
                       'nn.Sequential: argument 2 is a number, expected a module')
   end)

   it('prints a tree', function()
      local m = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.Sequential(nn.ReLU()))
      assert.equals(table.concat({
         'nn.Sequential {',
         '  (1): nn.Flatten',
         '  (2): nn.Linear(784 -> 128)',
         '  (3): nn.Sequential {',
         '    (1): nn.ReLU',
         '  }',
         '}'}, '\n'), tostring(m))
   end)
end)

describe('nn.Module', function()
   local Block = nn.Module:extend('Block')
   function Block:__init(w)
      self.fc = nn.Linear(w, w)
      self.scale = nn.Param(fnn.ones(w))
      self.head = nn.Linear(w, 1)
      self:register_buffer('count', fnn.zeros(1))
   end
   function Block:forward(x) return self.head(self.fc(x) * self.scale:tensor()) end

   it('makes callable classes whose fields register params and children in order', function()
      local b = Block(3)
      assert.same({'scale', 'fc.weight', 'fc.bias', 'head.weight', 'head.bias'}, names_of(b:named_parameters()))
      assert.same({'count'}, names_of(b:named_buffers()))
      assert.same({1, 1}, {#b:named_buffers(), #b:buffers()})
      assert.same({2, 1}, b(fnn.randn(2, 3)):shape())
      local s = nn.Sequential(b)
      assert.same({'1.count'}, names_of(s:named_buffers()))
      assert.matches('^nn%.Block {\n  %(fc%): nn%.Linear%(3 %-> 3%)\n  %(head%): nn%.Linear%(3 %-> 1%)\n}$', tostring(b))
   end)

   it('lists a shared parameter once', function()
      local lin = nn.Linear(2, 2)
      local m = nn.Sequential(lin, nn.Tanh(), lin)
      assert.same({'1.weight', '1.bias'}, names_of(m:named_parameters()))
   end)

   it('nn.scoped prefixes names for modules that keep weights their own way', function()
      local Wrap = nn.Module:extend('Wrap')
      function Wrap:__init() self.inner = {nn.Linear(2, 2)} end        -- a plain table: not tracked
      function Wrap:named_parameters() return nn.scoped('inner', self.inner[1]:named_parameters()) end
      function Wrap:forward(x) return self.inner[1](x) end
      local w = Wrap()
      assert.same({'inner.weight', 'inner.bias'}, names_of(w:named_parameters()))
      assert.same({'1.inner.weight', '1.inner.bias'}, names_of(nn.Sequential(w):named_parameters()))
      assert.equals(2, #w:parameters())
   end)

   it('train() and eval() set training recursively', function()
      local m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
      assert.is_true(m.training)
      m:eval()
      assert.is_false(m.training)
      assert.is_false(m[1].training)
      assert.is_false(m[2][1].training)
      m:train()
      assert.is_true(m[2][1].training)
      m:train(false)
      assert.is_false(m[2].training)
   end)

   it('freeze() stops gradients reaching the params, unfreeze() restores them', function()
      local l1, l2 = nn.Linear(3, 3), nn.Linear(3, 1)
      local m = nn.Sequential(l1, nn.Tanh(), l2)
      l1:freeze()
      m(fnn.randn(4, 3)):sum():backward()
      assert.is_nil(l1.weight:grad())
      assert.is_nil(l1.bias:grad())
      assert.is_not_nil(l2.weight:grad())
      m:zero_grad()
      assert.is_nil(l2.weight:grad())
      l1:unfreeze()
      m(fnn.randn(4, 3)):sum():backward()
      assert.is_not_nil(l1.weight:grad())
      m:freeze()
      assert.is_true(l2.bias:frozen())
   end)

   it('refuses forward on a module that does not define it', function()
      local Empty = nn.Module:extend('Empty')
      assert.has_error(function() Empty()(fnn.ones(1)) end, 'nn.Empty: forward is not defined')
   end)

   it('loads classes by name and answers nil for unknown ones', function()
      assert.is_nil(nn.NoSuchLayer)
      assert.equals(nn.Param, fnn.Param)
      -- every name of nn/init.lua's table resolves, and each class is nn[<its own name>] too
      for _, name in ipairs(nn._names) do
         local v = nn[name]
         assert.is_not_nil(v, name)
         if type(v) == 'table' and rawget(v, '_is_class') then assert.equals(v, nn[v._name], name) end
      end
      assert.equals('MaxPool2d', nn.MaxPool2d._name)
      assert.equals('Conv2D', nn.Conv2D._name)
      assert.equals(nn.GlobalAvgPool2d, nn.GlobalAveragePooling2D)   -- a Keras spelling of the same class
      assert.equals(nn.Conv2d, require('fastnn.nn.conv').Conv2d)      -- defined in its family module
   end)
end)

describe('nn losses', function()
   local pred = fnn.tensor{{0.5, -1.0, 2.0}, {0.0, 3.0, -0.5}}
   local target = fnn.tensor{{1.0, -1.0, 0.0}, {0.5, 2.0, 0.5}}
   local sq = {0.25, 0, 4, 0.25, 1, 1}   -- (pred - target)^2

   it('mse with mean, sum and none reductions', function()
      local sum = 0
      for _, v in ipairs(sq) do sum = sum + v end
      approx({sum / 6}, nn.mse(pred, target))
      approx({sum}, nn.mse(pred, target, {reduction = 'sum'}))
      approx(sq, nn.mse(pred, target, {reduction = 'none'}))
      assert.has_error(function() nn.mse(pred, target, {reduction = 'avg'}) end,
         "mse: reduction 'avg' is not one of 'mean', 'sum', 'none'")
   end)

   it('cross_entropy against logsumexp - logit[target], with tensor or table targets', function()
      local logits = fnn.tensor{{1.0, 2.0, 0.5}, {-1.0, 0.0, 3.0}, {0.2, 0.2, 0.2}}
      local ids = {2, 3, 1}
      local rows, lv = {}, logits:to_table()
      for r = 1, 3 do
         local s = 0
         for c = 1, 3 do s = s + math.exp(lv[r][c]) end
         rows[r] = math.log(s) - lv[r][ids[r]]
      end
      local mean = (rows[1] + rows[2] + rows[3]) / 3
      approx({mean}, nn.cross_entropy(logits, fnn.tensor(ids)))
      approx({mean}, nn.cross_entropy(logits, ids))
      approx({mean * 3}, nn.cross_entropy(logits, ids, {reduction = 'sum'}))
      approx(rows, nn.cross_entropy(logits, ids, {reduction = 'none'}))
   end)

   it('cross_entropy refuses an out-of-range class id', function()
      local ok, err = pcall(function() nn.cross_entropy(fnn.zeros(2, 3), {1, 4}) end)
      assert.is_false(ok)
      assert.matches('nn_spec%.lua:%d+: cross_entropy: class id 4 outside 1%.%.3', err)
   end)
end)
