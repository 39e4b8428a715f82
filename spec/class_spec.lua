-- fastnn.class: the one class helper every Lua class is made with.
local class = require 'fastnn.class'

local function here() return debug.getinfo(2, 'l').currentline end

describe('fastnn.class', function()
   it('class(name) makes a base class that __init fills', function()
      local Point = class('Point')
      function Point:__init(x, y) self.x, self.y = x, y end
      function Point:sum() return self.x + self.y end
      local p = Point(3, 4)
      assert.are.equal(Point, getmetatable(p))
      assert.are.equal(7, p:sum())
      assert.are.equal('Point', Point._name)
      assert.is_nil(Point._parent)
   end)

   it('__new builds the instance itself, its errors at the caller\'s line (level 2)', function()
      local Wrap = class('Wrap')
      function Wrap.__new(cls, t)
         if type(t) ~= 'table' then error('Wrap: expected a table, got a ' .. type(t), 2) end
         return setmetatable(t, cls)
      end
      local t = {a = 1}
      local w = Wrap(t)
      assert.are.equal(t, w)
      assert.are.equal(Wrap, getmetatable(w))
      local line = here() + 1
      local ok, err = pcall(function() local _ = Wrap(5) end)
      assert.is_false(ok)
      assert.are.equal(('spec/class_spec.lua:%d: Wrap: expected a table, got a number'):format(line), err)
   end)

   it('__init errors at level 3 reach the caller\'s line', function()
      local Box = class('Box')
      function Box:__init(n) if type(n) ~= 'number' then error('Box: n is a ' .. type(n), 3) end end
      local line = here() + 1
      local ok, err = pcall(function() local _ = Box('x') end)
      assert.is_false(ok)
      assert.are.equal(('spec/class_spec.lua:%d: Box: n is a string'):format(line), err)
   end)

   it('a subclass indexes its parent, copies its metamethods and does not inherit __new', function()
      local Base = class('Base')
      function Base.__new(cls, v) return setmetatable({v = v, made = 'new'}, cls) end
      function Base:get() return self.v end
      Base.__tostring = function(self) return 'Base(' .. tostring(self.v) .. ')' end
      Base.__concat = function(a, b) return tostring(a) .. '+' .. tostring(b) end
      local Sub = class.extend(Base, 'Sub')
      function Sub:__init(v) self.v = v * 2 end
      local s = Sub(5)
      assert.are.equal(10, s:get())
      assert.is_nil(s.made)
      assert.are.equal('Base(10)', tostring(s))
      assert.are.equal('Base(10)+x', s .. 'x')
      assert.are.equal(Base, Sub._parent)
      assert.are.equal('new', Base(1).made)
   end)

   it('how.construct and how.class_tostring replace the defaults', function()
      local K = class('K', {construct = function(cls, n) return setmetatable({n = n + 1}, cls) end,
                            class_tostring = function(cls) return 'class ' .. cls._name end})
      assert.are.equal(3, K(2).n)
      assert.are.equal('class K', tostring(K))
   end)

   it('refuses a class without a name, at the caller\'s line', function()
      local line = here() + 1
      local ok, err = pcall(function() local _ = class(nil) end)
      assert.is_false(ok)
      assert.are.equal(('spec/class_spec.lua:%d: class: expected a class name'):format(line), err)
   end)

   it('the library\'s classes are made with it', function()
      local fnn = require 'fastnn'
      for name, cls in pairs{DataLoader = fnn.data.DataLoader, TensorDataset = fnn.data.TensorDataset,
                             Sampler = fnn.nn.Sampler, BeamSearch = fnn.nn.BeamSearch,
                             GraphBuilder = fnn.nn.GraphBuilder, ReduceOnPlateau = fnn.optim.ReduceOnPlateau,
                             Ema = fnn.optim.Ema, Lookahead = fnn.optim.Lookahead, Param = fnn.nn.Param,
                             Module = fnn.nn.Module, Optimizer = fnn.optim.Optimizer, Device = fnn.Device} do
         assert.are.equal(name, rawget(cls, '_name'), name)
         assert.are.equal(cls, rawget(cls, '__index'), name)
      end
      assert.are.equal('CosineAnnealing', fnn.optim.CosineAnnealing(0.1, 10)._name)
      assert.are.equal('Schedule', fnn.optim.CosineAnnealing._parent._name)
      assert.are.equal(fnn.data.TensorDataset, fnn.data.CsvDataset._parent)
   end)
end)
