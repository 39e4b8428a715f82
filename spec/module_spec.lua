-- nn.Module API and the containers (Sequential, ModuleList): names, counts, modes,
-- freezing, devices, the tree, and the error prefix at the caller's line.
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local approx = support.approx

local function names_of(list)
   local r = {}
   for i, p in ipairs(list) do r[i] = p[1] end
   return r
end

-- the line a test is on, to check where an error is reported
local function here() return debug.getinfo(2, 'l').currentline end

-- the FastNN seed's user module: forward only, its Linear found through the field
local Residual = nn.Module:extend('Residual')
function Residual:__init(width) self.inner = nn.Linear(width, width) end
function Residual:forward(x) return x + self.inner(x):relu() end

-- a module keeping its weights in a plain table: names through nn.scoped
local Pair = nn.Module:extend('Pair')
function Pair:__init() self.parts = {nn.Linear(2, 3), nn.Linear(3, 1)} end
function Pair:named_parameters()
   local out = nn.scoped('first', self.parts[1]:named_parameters())
   for _, p in ipairs(nn.scoped('second', self.parts[2]:named_parameters())) do out[#out + 1] = p end
   return out
end
function Pair:forward(x) return self.parts[2](self.parts[1](x)) end

-- a layer with a buffer, an option in its short_str, and a mode-dependent forward
local Counter = nn.Module:extend('Counter')
function Counter:__init(w)
   self.scale = nn.Param(fnn.full({w}, 2))
   self:register_buffer('seen', fnn.zeros(1))
end
function Counter:short_str() return ('nn.Counter(%d)'):format(self.scale:numel()) end
function Counter:forward(x)
   if self.training then self.seen = self.seen + 1 end
   return x * self.scale:tensor()
end

describe('Module:named_parameters', function()
   it('names Sequential children by position, nested with dots, in order', function()
      local m = nn.Sequential(
         nn.Linear(4, 3),
         nn.Sequential(nn.ReLU(), nn.Linear(3, 3, {bias = false}), nn.Sequential(nn.Linear(3, 2))),
         Residual(2))
      assert.same({'1.weight', '1.bias', '2.2.weight', '2.3.1.weight', '2.3.1.bias',
                   '3.inner.weight', '3.inner.bias'}, names_of(m:named_parameters()))
      local ps = m:parameters()
      assert.equals(7, #ps)
      assert.equals(m[1].weight, ps[1])
      assert.equals(m[3].inner.bias, ps[7])
      -- the same order on every call
      assert.same(names_of(m:named_parameters()), names_of(m:named_parameters()))
   end)

   it('lists own params first, then children in assignment order', function()
      local Net = nn.Module:extend('Net')
      function Net:__init()
         self.head = nn.Linear(2, 1)
         self.gain = nn.Param(fnn.ones(1))
         self.body = Residual(2)
         self.act = nn.ReLU()
         self.width = 2                    -- plain fields are not parameters
      end
      local n = Net()
      assert.same({'gain', 'head.weight', 'head.bias', 'body.inner.weight', 'body.inner.bias'},
                  names_of(n:named_parameters()))
      assert.same({'head', 'body', 'act'}, names_of(n:named_children()))
      assert.same({n.head, n.body, n.act}, n:children())
   end)

   it('takes names from an overriding named_parameters with nn.scoped, also when nested', function()
      local p = Pair()
      assert.same({'first.weight', 'first.bias', 'second.weight', 'second.bias'}, names_of(p:named_parameters()))
      assert.same({'1.first.weight', '1.first.bias', '1.second.weight', '1.second.bias', '2.inner.weight',
                   '2.inner.bias'}, names_of(nn.Sequential(p, Residual(1)):named_parameters()))
      assert.equals(2 * 3 + 3 + 3 + 1, p:num_parameters())
   end)

   it('nn.scoped refuses what is not a prefix and a list', function()
      assert.has_error(function() nn.scoped(3, {}) end, 'scoped: prefix must be a string')
      assert.has_error(function() nn.scoped('a', 'b') end, 'scoped: expected an array of {name, param} pairs')
   end)

   it('lists a layer used twice once, under its first name', function()
      local shared = nn.Linear(2, 2)
      local m = nn.Sequential(nn.Linear(2, 2), shared, nn.Tanh(), shared)
      assert.same({'1.weight', '1.bias', '2.weight', '2.bias'}, names_of(m:named_parameters()))
      assert.equals(2 * (4 + 2), m:num_parameters())
      assert.equals(4, #m:modules())   -- self, 1, 2 (shared), 3: the second use is not listed again
   end)

   it('register_parameter and add_module name things built at run time', function()
      local m = nn.Module()
      for i = 1, 2 do m:add_module('fc' .. i, nn.Linear(1, 1)) end
      m:register_parameter('t', nn.Param(fnn.zeros(3)))
      assert.same({'t', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias'}, names_of(m:named_parameters()))
      assert.has_error(function() m:add_module('x', 3) end, 'add_module: x is not a module')
      assert.has_error(function() m:register_parameter('y', fnn.zeros(1)) end,
                       'register_parameter: y is not an nn.Param')
   end)
end)

describe('Module buffers', function()
   it('named_buffers names them like parameters; set_buffer replaces one by its dotted name', function()
      local m = nn.Sequential(nn.Linear(1, 1), nn.Sequential(Counter(3)))
      assert.same({'2.1.seen'}, names_of(m:named_buffers()))
      assert.equals(1, #m:buffers())
      assert.same({'1.scale'}, names_of(m[2]:named_parameters()))
      m:set_buffer('2.1.seen', fnn.tensor{7})
      approx({7}, m[2][1].seen)
      approx({7}, m:buffers()[1])
      local ok, err = pcall(function() m:set_buffer('2.1.nothing', fnn.zeros(1)) end)
      assert.is_false(ok)
      assert.matches('module_spec%.lua:%d+: set_buffer: nn%.Sequential has no buffer 2%.1%.nothing', err)
   end)

   it('a buffer updated in forward in training mode only', function()
      local c = Counter(2)
      c(fnn.ones(2)); c(fnn.ones(2))
      approx({2}, c.seen)
      c:eval()
      c(fnn.ones(2))
      approx({2}, c.seen)
   end)
end)

describe('Module:num_parameters', function()
   it('counts elements, optionally only the trainable ones', function()
      local m = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3, {bias = false}), Counter(3))
      assert.equals(5 * 4 + 4 + 4 * 3 + 3, m:num_parameters())
      m[1]:freeze()
      assert.equals(5 * 4 + 4 + 4 * 3 + 3, m:num_parameters())
      assert.equals(4 * 3 + 3, m:num_parameters{trainable = true})
      assert.equals(0, nn.ReLU():num_parameters())
   end)
end)

describe('Module:train and eval', function()
   it('set training in every descendant, including fields of user modules and ModuleList items', function()
      local Net = nn.Module:extend('Net2')
      function Net:__init()
         self.blocks = nn.ModuleList(Counter(1), nn.Sequential(Counter(1)))
         self.tail = Residual(1)
      end
      local n = Net()
      local all = n:modules()
      assert.equals(7, #all)   -- Net, ModuleList, Counter, Sequential, Counter, Residual, Linear
      for _, m in ipairs(all) do assert.is_true(m.training) end
      assert.equals(n, n:eval())
      for _, m in ipairs(all) do assert.is_false(m.training) end
      n:train()
      for _, m in ipairs(all) do assert.is_true(m.training) end
      n.blocks:train(false)
      assert.is_true(n.training)
      assert.is_true(n.tail.inner.training)
      assert.is_false(n.blocks[2][1].training)
   end)
end)

describe('Module:freeze and zero_grad', function()
   it('a frozen module computes no gradient; unfreeze restores it', function()
      fnn.manual_seed(3)
      local body, head = nn.Linear(3, 3), nn.Linear(3, 1)
      local m = nn.Sequential(body, nn.Tanh(), head)
      local x = fnn.randn(4, 3)
      m:freeze()
      for _, p in ipairs(m:parameters()) do assert.is_true(p:frozen()) end
      local y = m(x)
      assert.is_nil(y:grad_fn())           -- no graph is built at all
      body:unfreeze()
      y = m(x)
      assert.is_not_nil(y:grad_fn())
      y:sum():backward()
      assert.is_not_nil(body.weight:grad())
      assert.is_nil(head.weight:grad())
      assert.is_nil(head.bias:grad())
      m:unfreeze()
      for _, p in ipairs(m:parameters()) do assert.is_false(p:frozen()) end
   end)

   it('zero_grad drops every gradient in the tree', function()
      local m = nn.Sequential(nn.Linear(2, 2), Residual(2))
      local x = fnn.randn(3, 2)
      m(x):sum():backward()
      for _, p in ipairs(m:parameters()) do assert.is_not_nil(p:grad()) end
      -- gradients accumulate: two backwards give twice one
      local g1 = m[1].bias:grad():to_flat()
      m(x):sum():backward()
      local twice = {}
      for i, v in ipairs(g1) do twice[i] = 2 * v end
      approx(twice, m[1].bias:grad())
      assert.equals(m, m:zero_grad())
      for _, p in ipairs(m:parameters()) do assert.is_nil(p:grad()) end
      m(x):sum():backward()
      approx(g1, m[1].bias:grad())
   end)
end)

describe('Module:to_device', function()
   it("moves params and buffers to 'cpu' (where they are) keeping values and gradients", function()
      local m = nn.Sequential(nn.Linear(2, 2), Counter(2))
      local before = m[1].weight:tensor():to_flat()
      m(fnn.ones(1, 2)):sum():backward()
      local g = m[1].weight:grad():to_flat()
      assert.equals(m, m:to_device('cpu'))
      assert.equals(m, m:to_device(fnn.Device.cpu()))
      approx(before, m[1].weight:tensor())
      approx(g, m[1].weight:grad())
      for _, p in ipairs(m:parameters()) do assert.equals('cpu', tostring(p:tensor():device())) end
      assert.equals('cpu', tostring(m[2].seen:device()))
      assert.same({1, 2}, m(fnn.ones(1, 2)):shape())
   end)

   -- busted loads fastnn afresh for each spec file while tensors keep the methods of the process's
   -- first load (the ffi metatype is bound once): a later load's modules must hand those methods
   -- Devices they take (this test failed with "to: device is table" before Devices were per process)
   it('works from a second load of fastnn in the same process, as busted makes one per spec file', function()
      support.second_load(function(fnn2)
         assert.are_not.equal(fnn, fnn2)   -- a real second load
         assert.equals(fnn.Device.cpu(), fnn2.Device.cpu())
         assert.equals(fnn2.Device.cpu(), fnn.ones(2):device())
         local m = fnn2.nn.Linear(2, 2)
         assert.equals(m, m:to_device('cpu'))
         assert.equals(m, m:to_device(fnn2.Device.cpu()))
         assert.equals('cpu', tostring(m.weight:tensor():device()))
      end)
   end)

   it('refuses an unknown device at the caller line', function()
      local m = nn.Linear(1, 1)
      local ok, err = pcall(function() m:to_device('tpu') end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches("module_spec%.lua:" .. line .. ": to_device: device is 'tpu', expected a Device", err)
   end)
end)

describe('Module classes', function()
   it('extend makes a callable class; the seed Residual takes a few lines', function()
      fnn.manual_seed(4)
      local r = Residual(3)
      local x = fnn.randn(2, 3)
      local w, b = r.inner.weight:tensor():to_table(), r.inner.bias:tensor():to_flat()
      local xs, y = x:to_table(), r(x)
      local want = {}
      for i = 1, 2 do
         for o = 1, 3 do
            local s = b[o]
            for k = 1, 3 do s = s + xs[i][k] * w[o][k] end
            want[#want + 1] = xs[i][o] + math.max(s, 0)
         end
      end
      approx(want, y)
      approx(want, r:forward(x))
      assert.is_true(r:is_instance_of(Residual))
      assert.is_true(r:is_instance_of(nn.Module))
      assert.is_false(r:is_instance_of(nn.Linear))
      assert.equals('class nn.Residual', tostring(Residual))
   end)

   it('a subclass inherits methods and may override them', function()
      local Scaled = Residual:extend('Scaled')
      function Scaled:forward(x) return Residual.forward(self, x) * 2 end
      local s = Scaled(2)
      local x = fnn.ones(1, 2)
      local base = Residual.forward(s, x):to_flat()
      approx({2 * base[1], 2 * base[2]}, s(x))
      assert.same({'inner.weight', 'inner.bias'}, names_of(s:named_parameters()))
      assert.is_true(s:is_instance_of(Residual))
      assert.has_error(function() s:extend('Nope') end, 'extend: called on an instance of nn.Scaled, expected a class')
   end)

   it('apply visits children before their parent, each module once', function()
      local shared = nn.ReLU()
      local m = nn.Sequential(nn.Sequential(shared, nn.Tanh()), shared)
      local seen = {}
      m:apply(function(x) seen[#seen + 1] = x:short_str() end)
      assert.same({'nn.ReLU', 'nn.Tanh', 'nn.Sequential', 'nn.Sequential'}, seen)
      assert.same({'', '1', '1.1', '1.2'}, names_of(m:named_modules()))
   end)

   it('forward is required', function()
      local Empty = nn.Module:extend('Empty')
      local ok, err = pcall(function() Empty()(fnn.ones(1)) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('module_spec%.lua:' .. line .. ': nn%.Empty: forward is not defined', err)
   end)
end)

describe('Module __tostring', function()
   it('prints each short_str on its line with the children indented under their names', function()
      local Net = nn.Module:extend('Net3')
      function Net:__init()
         self.stem = nn.Sequential(nn.Linear(784, 128), nn.ReLU())
         self.res = Residual(128)
         self.count = Counter(4)
         self.head = nn.Linear(128, 10, {bias = false})
      end
      assert.equals(table.concat({
         'nn.Net3 {',
         '  (stem): nn.Sequential {',
         '    (1): nn.Linear(784 -> 128)',
         '    (2): nn.ReLU',
         '  }',
         '  (res): nn.Residual {',
         '    (inner): nn.Linear(128 -> 128)',
         '  }',
         '  (count): nn.Counter(4)',
         '  (head): nn.Linear(128 -> 10, no bias)',
         '}'}, '\n'), tostring(Net()))
      assert.equals('nn.Counter(4)', tostring(Counter(4)))
      assert.equals('nn.Sequential', nn.Sequential(nn.ReLU()):short_str())
      assert.equals('nn.Linear(2 -> 3)', nn.Linear(2, 3):short_str())   -- a one-line __tostring
      assert.equals('nn.Sequential', tostring(nn.Sequential()))
      assert.equals('nn.ModuleList {\n  (1): nn.Tanh\n}', tostring(nn.ModuleList{nn.Tanh()}))
   end)
end)

describe('nn.Sequential', function()
   it('builds from varargs, a table or add chains, and indexes like an array', function()
      local a, b, c = nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1)
      local s1, s2 = nn.Sequential(a, b, c), nn.Sequential{a, b, c}
      local s3 = nn.Sequential():add(a):add(b):add(c)
      for _, s in ipairs{s1, s2, s3} do
         assert.equals(3, #s)
         assert.equals(3, s:len())
         assert.same({a, b, c}, {s[1], s[2], s[3]})
         assert.equals(c, s:get(-1))
      end
      local x = fnn.randn(4, 2)
      local want = c(a(x):tanh()):to_flat()
      approx(want, s1(x))
      approx(want, s3:forward(x))
      local seen = {}
      for i, m in ipairs(s1) do seen[i] = m end
      assert.same({a, b, c}, seen)
   end)

   it('insert and remove keep the positional names in step', function()
      local s = nn.Sequential(nn.Linear(1, 2), nn.Linear(2, 3))
      local t = nn.Tanh()
      s:insert(t, 2)
      assert.same({'1.weight', '1.bias', '3.weight', '3.bias'}, names_of(s:named_parameters()))
      assert.equals(t, s[2])
      assert.equals(t, s:remove(2))
      assert.equals(2, #s)
      assert.same({'1.weight', '1.bias', '2.weight', '2.bias'}, names_of(s:named_parameters()))
      local ok, err = pcall(function() s:remove(5) end)
      assert.matches('module_spec%.lua:%d+: nn%.Sequential:remove: position 5 out of range for 2 modules', err)
      ok, err = pcall(function() s:add('relu') end)
      assert.matches('module_spec%.lua:%d+: nn%.Sequential: add: argument is a string, expected a module', err)
   end)

   it('passes every argument to the first child and every result of the last one back', function()
      local Two = nn.Module:extend('Two')
      function Two.forward(_, a, b) return a + b, a - b end
      local x, y = fnn.tensor{3}, fnn.tensor{1}
      approx({4}, (nn.Sequential(Two())(x, y)))
      local p, q = nn.Sequential(Two())(x, y)
      approx({2}, q)                      -- a single child returns all its results too
      -- between children only the first result travels: Identity sees 4, not (4, 2)
      local Count = nn.Module:extend('Count')
      function Count.forward(_, ...) return fnn.tensor{select('#', ...)} end
      approx({1}, (nn.Sequential(Two(), Count())(x, y)))
      local Split = nn.Module:extend('Split')
      function Split.forward(_, a) return a * 2, a * 3 end
      p, q = nn.Sequential(Two(), nn.Identity(), Split())(x, y)
      approx({8}, p)
      approx({12}, q)
      -- an empty Sequential returns what it was given
      local e1, e2 = nn.Sequential()(x, y)
      assert.equals(x, e1)
      assert.equals(y, e2)
   end)

   it("re-raises a child's error prefixed with position and short_str, at the model's caller line", function()
      local m = nn.Sequential(nn.Flatten(), nn.ReLU(), nn.Linear(784, 128), nn.ReLU())
      local ok, err = pcall(function() m(fnn.randn(2, 100)) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('^[^\n]*module_spec%.lua:' .. line .. ': Sequential%[3%] nn%.Linear%(784 %-> 128%): '
                     .. 'Linear%(784 %-> 128%): input %[2,100%] has 100 features in its last dim$', err)
      -- m:forward(x) reports the same line
      ok, err = pcall(function() m:forward(fnn.randn(2, 100)) end)
      line = here() - 1
      assert.matches('^[^\n]*module_spec%.lua:' .. line .. ': Sequential%[3%]', err)
   end)

   it('chains prefixes through nested containers and user modules', function()
      local Wrap = nn.Module:extend('Wrap')
      function Wrap:__init() self.body = nn.Sequential(nn.Identity(), nn.Linear(3, 2)) end
      function Wrap:forward(x) return self.body(x) end
      local m = nn.Sequential(nn.Identity(), nn.Sequential(nn.ReLU(), Wrap()))
      local ok, err = pcall(function() m(fnn.randn(2, 5)) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('^[^\n]*module_spec%.lua:' .. line .. ': Sequential%[2%] nn%.Sequential: '
                     .. 'Sequential%[2%] nn%.Wrap: Sequential%[2%] nn%.Linear%(3 %-> 2%): '
                     .. 'Linear%(3 %-> 2%): input %[2,5%] has 5 features in its last dim$', err)
   end)

   it('keeps the position of a bug inside a user module and the message of a C op', function()
      local Buggy = nn.Module:extend('Buggy')
      function Buggy.forward(_, x) return x + nil end
      local m = nn.Sequential(nn.ReLU(), Buggy())
      local ok, err = pcall(function() m(fnn.ones(2)) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('module_spec%.lua:' .. line .. ': Sequential%[2%] nn%.Buggy: '
                     .. 'spec/module_spec%.lua:%d+: add: ', err)
      local Mm = nn.Module:extend('Mm')
      function Mm.forward(_, x) return x:matmul(fnn.ones(4, 2)) end
      ok, err = pcall(function() nn.Sequential(Mm())(fnn.ones(2, 3)) end)
      line = here() - 1
      assert.matches('module_spec%.lua:' .. line .. ': Sequential%[1%] nn%.Mm: matmul: shapes %[2,3%] and %[4,2%] '
                     .. 'do not agree$', err)
   end)

   it('passes an error object through untouched', function()
      local Throw = nn.Module:extend('Throw')
      local obj = {code = 7}
      function Throw.forward() error(obj) end
      local ok, err = pcall(function() nn.Sequential(Throw())(fnn.ones(1)) end)
      assert.is_false(ok)
      assert.equals(obj, err)
   end)

   it('refuses a non-module child at the caller line', function()
      local ok, err = pcall(function() nn.Sequential(nn.ReLU(), 3) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('module_spec%.lua:' .. line .. ': nn%.Sequential: argument 2 is a number, expected a module', err)
   end)
end)

describe('nn.ModuleList', function()
   it('holds modules for a user forward, named by position', function()
      local Stack = nn.Module:extend('Stack')
      function Stack:__init(n, w)
         self.layers = nn.ModuleList()
         for _ = 1, n do self.layers:append(nn.Linear(w, w)) end
      end
      function Stack:forward(x)
         for _, layer in ipairs(self.layers) do x = layer(x) end
         return x
      end
      local s = Stack(3, 2)
      assert.equals(3, #s.layers)
      assert.same({'layers.1.weight', 'layers.1.bias', 'layers.2.weight', 'layers.2.bias', 'layers.3.weight',
                   'layers.3.bias'}, names_of(s:named_parameters()))
      local x = fnn.randn(2, 2)
      local l = s.layers
      approx(l[3](l[2](l[1](x))):to_flat(), s(x))
   end)

   it('has no forward of its own', function()
      local ok, err = pcall(function() nn.ModuleList(nn.ReLU())(fnn.ones(1)) end)
      local line = here() - 1
      assert.is_false(ok)
      assert.matches('module_spec%.lua:' .. line .. ': nn%.ModuleList has no forward', err)
      assert.has_error(function() nn.ModuleList(1) end, 'nn.ModuleList: argument 1 is a number, expected a module')
      assert.has_error(function() nn.ModuleList():get(1) end,
                       'nn.ModuleList:get: position 1 out of range for 0 modules')
   end)
end)
