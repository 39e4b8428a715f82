-- The merge layers of graph models: nn.Add, Subtract, Multiply, Average, Maximum, Minimum
-- (element by element over inputs of one shape; Subtract takes exactly two), all subclasses of
-- Elementwise below, and nn.Concatenate(dim = -1) (inputs equal outside dim, joined along it).
--   local y = nn.Add()({a, b, c})          -- or nn.Add()(a, b, c)
--   nn.Concatenate(2):output_shape{{8, 3}, {8, 5}}   --> {8, 8}
-- forward and output_shape apply one shape rule, so a graph builder can check a topology
-- on shapes alone (output_shape raises the same messages) before any data moves.
-- Gradients flow through the C ops used (add, sub, mul, mul_scalar, maximum, minimum, cat).
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local C, new, done, istype = fnn_tensor.C, fnn_tensor.new, fnn_tensor.done, fnn_tensor.is_tensor
local floor = math.floor

local M = {}

local function shape_text(s) return '[' .. table.concat(s, ',') .. ']' end

local function list_text(shapes)
   local parts = {}
   for i, s in ipairs(shapes) do parts[i] = shape_text(s) end
   return table.concat(parts, ', ')
end

local function same(a, b)
   if #a ~= #b then return false end
   for d = 1, #a do if a[d] ~= b[d] then return false end end
   return true
end

local function copy(s)
   local r = {}
   for d = 1, #s do r[d] = s[d] end
   return r
end

-- shape rules: (layer, shapes) -> output shape, or nil and the message
local function count_rule(self, shapes)
   local n, want = #shapes, self._arity
   if want and n ~= want then
      return nil, ('%s: needs exactly %d inputs, got %d (%s)'):format(self:_label(), want, n, list_text(shapes))
   end
   if n < 2 then
      return nil, ('%s: needs at least 2 inputs, got %d%s'):format(self:_label(), n,
                                                                   n > 0 and (' (' .. list_text(shapes) .. ')') or '')
   end
end

local function same_shape_rule(self, shapes)
   local _, err = count_rule(self, shapes)
   if err then return nil, err end
   for i = 2, #shapes do
      if not same(shapes[1], shapes[i]) then
         return nil, ('%s: inputs must all have the same shape, got %s'):format(self:_label(), list_text(shapes))
      end
   end
   return copy(shapes[1])
end

-- Concatenate's: same number of dims, equal outside dim; returns the shape and the 1-based dim
local function concat_rule(self, shapes)
   local _, err = count_rule(self, shapes)
   if err then return nil, err end
   local nd = #shapes[1]
   for i = 2, #shapes do
      if #shapes[i] ~= nd then
         return nil, ('%s: inputs must have the same number of dims, got %s'):format(self:_label(), list_text(shapes))
      end
   end
   local d = self.dim < 0 and nd + 1 + self.dim or self.dim
   if d < 1 or d > nd then
      return nil, ('%s: dim %d out of range for inputs %s (dims are 1..%d or -%d..-1)'):format(
         self:_label(), self.dim, list_text(shapes), nd, nd)
   end
   local out = copy(shapes[1])
   for i = 2, #shapes do
      for k = 1, nd do
         if k ~= d and shapes[i][k] ~= out[k] then
            return nil, ('%s: inputs must agree outside dim %d, got %s'):format(self:_label(), d, list_text(shapes))
         end
      end
      out[d] = out[d] + shapes[i][d]
   end
   return out, d
end

-- forward(list) or forward(x1, x2, ...) -> the array of inputs, or nil and the message
local function inputs_of(self, ...)
   local first = ...
   local xs
   if select('#', ...) == 0 then
      xs = {}
   elseif select('#', ...) == 1 and type(first) == 'table' then
      xs = first
   else
      xs = {...}
      for i = 1, select('#', ...) do
         if xs[i] == nil then
            return nil, ('%s: input %d is nil, expected a tensor'):format(self:_label(), i)
         end
      end
   end
   if select('#', ...) > 0 and not istype(first) and type(first) ~= 'table' then
      return nil, ('%s: expected a Lua array of tensors (or tensors as arguments), got a %s'):format(
         self:_label(), type(first))
   end
   local shapes = {}
   for i = 1, #xs do
      if not istype(xs[i]) then
         return nil, ('%s: input %d is a %s, expected a tensor'):format(self:_label(), i, type(xs[i]))
      end
      shapes[i] = xs[i]:shape()
   end
   return xs, shapes
end

-- output_shape{shape1, shape2, ...}: the output shape for inputs of these shapes (Lua
-- tables of sizes), raising at the caller's line what forward would raise
local function output_shape(self, shapes)
   if type(shapes) ~= 'table' then
      error(('%s: output_shape expects a list of shapes, got a %s'):format(self:_label(), type(shapes)), 2)
   end
   for i, s in ipairs(shapes) do
      local ok = type(s) == 'table'
      if ok then
         for _, v in ipairs(s) do ok = ok and type(v) == 'number' and v >= 0 and v == floor(v) end
      end
      if not ok then
         error(('%s: output_shape: shape %d is %s, expected a table of sizes'):format(
            self:_label(), i, type(s) == 'table' and 'not a list of sizes' or ('a ' .. type(s))), 2)
      end
   end
   local out, err = self._rule(self, shapes)
   if not out then error(err, 2) end
   return out
end

local function label(self) return self._name end

-- ---------------------------------------------------------------------------
-- Elementwise: the C op _cfn of its class folded pairwise over the inputs (each has its
-- gradient); _arity 2 for Subtract, nil for any count >= 2

local Elementwise = nn.Module:extend('Elementwise')
Elementwise._rule, Elementwise._label, Elementwise.output_shape = same_shape_rule, label, output_shape

function Elementwise:forward(...)
   local name = self._title
   local xs, shapes = inputs_of(self, ...)
   if not xs then error(shapes, 2) end
   local _, err = same_shape_rule(self, shapes)
   if err then error(err, 2) end
   -- a C refusal the shape rule cannot see (devices, dtypes) is raised at the caller's line too
   local cfn = self._cfn
   local acc = xs[1]
   for i = 2, #xs do
      local out = new()
      if cfn(out, acc, xs[i]) ~= 0 then error(name .. ': ' .. fnn_tensor.last_error(), 2) end
      acc = done(out)
   end
   if self._mean then
      if acc.dtype_ ~= 0 then acc = acc:float() end   -- int64 inputs average to float32
      local out = new()
      if C.fnn_mul_scalar(out, acc, 1 / #xs) ~= 0 then error(name .. ': ' .. fnn_tensor.last_error(), 2) end
      acc = done(out)
   end
   return acc
end

local function elementwise(name, cfn_name, arity)
   local cls = Elementwise:extend(name)
   cls._title, cls._cfn, cls._arity = name, C[cfn_name], arity
   M[name] = cls
   return cls
end

-- nn.Add(): the element-wise sum of two or more inputs of one shape (a merge layer)
local Add = elementwise('Add', 'fnn_add')

-- nn.Subtract(): a - b for exactly two inputs of one shape (a merge layer)
local Subtract = elementwise('Subtract', 'fnn_sub', 2)

-- nn.Multiply(): the element-wise product of two or more inputs of one shape (a merge layer)
local Multiply = elementwise('Multiply', 'fnn_mul')

-- nn.Average(): the element-wise mean of two or more inputs of one shape (a merge layer)
local Average = elementwise('Average', 'fnn_add')
Average._mean = true   -- the sum, then divided by the count

-- nn.Maximum(): the element-wise maximum of two or more inputs of one shape (a merge layer)
local Maximum = elementwise('Maximum', 'fnn_maximum')

-- nn.Minimum(): the element-wise minimum of two or more inputs of one shape (a merge layer)
local Minimum = elementwise('Minimum', 'fnn_minimum')

-- ---------------------------------------------------------------------------
-- nn.Concatenate(dim = -1): inputs equal outside dim joined along it (a merge layer)
-- nn.Concatenate{dim = -1} says the same; dim is 1-based, negative from the end.

local cat_ptrs = ffi.typeof('const fnn_tensor *[?]')

local Concatenate = nn.Module:extend('Concatenate')
Concatenate._rule, Concatenate.output_shape = concat_rule, output_shape
local CONCAT_OPTS = require('fastnn.options').declare('nn.Concatenate', {
   {'dim', 'integer', -1, 'the dim joined along (1-based; negative from the end)'},
})

function Concatenate:__init(opts)
   local dim = opts
   if type(opts) == 'table' then dim = CONCAT_OPTS:check(opts, 3).dim end
   if dim == nil then dim = -1 end
   if type(dim) ~= 'number' or dim ~= floor(dim) or dim == 0 then
      error(('nn.%s: dim is %s, expected a non-zero integer (1-based, negative from the end)'):format(
         'Concatenate', show_value(dim)), 3)
   end
   self.dim = dim
end

function Concatenate:_label() return ('%s(dim %d)'):format('Concatenate', self.dim) end
function Concatenate:short_str() return ('nn.%s(dim %d)'):format('Concatenate', self.dim) end

function Concatenate:forward(...)
   local xs, shapes = inputs_of(self, ...)
   if not xs then error(shapes, 2) end
   local _, d = concat_rule(self, shapes)
   if not _ then error(d, 2) end
   local arr = cat_ptrs(#xs)
   for i = 1, #xs do arr[i - 1] = xs[i] end
   local out = new()
   if C.fnn_cat(out, #xs, arr, d - 1) ~= 0 then
      error(('%s: %s'):format(self:_label(), fnn_tensor.last_error()), 2)
   end
   return done(out)
end
M.Concatenate = Concatenate

return M
