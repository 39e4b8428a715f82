-- fastnn.nn.shape: shape inference for layers and models (Module:output_shape's default,
-- Sequential:build, GraphBuilder).
--   local shape = require 'fastnn.nn.shape'
--   shape.infer(layer, {8, 784})        --> {8, 128}, or nil and the reason (a needed shape or a message)
--   nn.Linear(784, 128):output_shape{8, 784}   --> {8, 128}   (installed on nn.Module by this file)
-- Shapes are Lua arrays of sizes that include the batch dim (the RustyML seed's build{8, 4}).
-- A layer answers by rule where the rule is the layer's whole contract (Linear, the conv family's
-- channels, norms' feature counts); otherwise it runs once on zeros with a batch of 1, under
-- no_grad and in eval mode (modes restored), so the C ops' own logic (padding 'same', pooling
-- windows) decides, and a layer refuses exactly what its forward would refuse. A layer class may
-- define its own output_shape(shape); merge layers take a list of shapes (fastnn/nn/merge.lua).
local fnn_tensor = require 'fastnn.tensor'
local nn = require 'fastnn.nn'
local autograd = require 'fastnn.autograd'
local floor, concat = math.floor, table.concat

local M = {}
local Module = nn.Module

function M.str(s)
   local parts = {}
   for i = 1, #s do parts[i] = tostring(s[i]) end
   return '[' .. concat(parts, ',') .. ']'
end

-- Keras' display: (None, 16) for a shape whose first size is the batch
function M.keras_str(s)
   local parts = {'None'}
   for i = 2, #s do parts[i] = tostring(s[i]) end
   return '(' .. concat(parts, ', ') .. (#s == 1 and ',' or '') .. ')'
end

function M.copy(s)
   local r = {}
   for i = 1, #s do r[i] = s[i] end
   return r
end

function M.same(a, b)
   if #a ~= #b then return false end
   for i = 1, #a do if a[i] ~= b[i] then return false end end
   return true
end

-- nil when s is a shape (a Lua array of whole sizes >= 0), else the reason
function M.check(s)
   if type(s) ~= 'table' then return ('a shape is a Lua array of sizes, got a %s'):format(type(s)) end
   if #s == 0 then return 'a shape needs at least the batch dim' end
   for i = 1, #s do
      local v = s[i]
      if type(v) ~= 'number' or v < 0 or v ~= floor(v) then
         return ('size %d of the shape is %s, expected a whole number'):format(i, tostring(v))
      end
   end
end

local function strip_where(msg)
   if type(msg) ~= 'string' then return tostring(msg) end
   return (msg:gsub('^[^:\n]+:%d+: ', ''))
end
M.strip_where = strip_where

local function is_a(layer, name)
   local c = getmetatable(layer)
   while c do
      if rawget(c, '_name') == name then return true end
      c = rawget(c, '_parent')
   end
   return false
end

local SPATIAL = {'L', 'H,W', 'D,H,W'}

-- rules: (layer, shape) -> output shape | nil, needed shape text | false (no rule: run it)
local function linear_rule(layer, s)
   if #s < 2 or s[#s] ~= layer.inputs then
      local need = M.copy(s)
      if #need < 2 then need = {s[1] or 'N', layer.inputs} else need[#need] = layer.inputs end
      return nil, M.str(need)
   end
   local out = M.copy(s)
   out[#out] = layer.outputs
   return out
end

-- the conv family (fields nd, inputs, kernel): rank nd + 2, channels in dim 2
local function channels_rule(layer, s, channels, nd)
   if #s ~= nd + 2 or s[2] ~= channels then
      return nil, ('[%s,%d,%s]'):format(tostring(s[1]), channels, SPATIAL[nd] or '...')
   end
   return false
end

local function rule_of(layer)
   if is_a(layer, 'Linear') then return linear_rule end
   if rawget(layer, 'nd') and rawget(layer, 'inputs') and rawget(layer, 'kernel') then
      return function(l, s) return channels_rule(l, s, l.inputs, l.nd) end
   end
   if is_a(layer, 'GroupNorm') then
      return function(l, s)
         if #s < 2 or s[2] ~= l.num_channels then return nil, ('[%s,%d,...]'):format(tostring(s[1]), l.num_channels) end
         return M.copy(s)
      end
   end
   if rawget(layer, 'num_features') and rawget(layer, 'track_running_stats') ~= nil then   -- batch/instance norms
      return function(l, s)
         if #s < 2 or s[2] ~= l.num_features then return nil, ('[%s,%d,...]'):format(tostring(s[1]), l.num_features) end
         return false
      end
   end
   if (is_a(layer, 'LayerNorm') or is_a(layer, 'RMSNorm')) and type(rawget(layer, 'shape')) == 'table' then
      return function(l, s)
         local ns = l.shape
         local ok = #s >= #ns
         for i = 1, #ns do ok = ok and s[#s - #ns + i] == ns[i] end
         if not ok then return nil, ('[...,%s]'):format(concat(ns, ',')) end
         return M.copy(s)
      end
   end
end

-- every module's `training` flag, to put back after a probe run
local function modes(layer)
   local saved = {}
   local function add(root)
      for _, m in ipairs(root:modules()) do
         saved[#saved + 1] = {m, rawget(m, 'training')}
         local inner = rawget(m, 'inner')   -- a built Keras-style layer hides its inner layer
         if inner and m._keras then add(inner) end
      end
   end
   add(layer)
   return saved
end
local function restore(saved)
   for _, e in ipairs(saved) do rawset(e[1], 'training', e[2]) end
end

M.modes, M.restore_modes = modes, restore

-- run layer once on zeros shaped s with a batch of 1; the output shape with s's batch back
local function probe(layer, s)
   local p = M.copy(s)
   local batch = p[1]
   if batch ~= 1 and batch ~= 0 then p[1] = 1 end
   local saved = modes(layer)
   layer:train(false)
   local ok, y = pcall(autograd.no_grad, function()
      return layer:forward(fnn_tensor.zeros(p))
   end)
   restore(saved)
   -- the layer's message shows the probe's batch of 1, so say so
   if not ok then return nil, strip_where(y) .. (batch ~= p[1] and ' (probed with a batch of 1)' or ''), true end
   if not fnn_tensor.is_tensor(y) then
      return nil, ('its forward returned a %s, not a tensor'):format(type(y)), true
   end
   local out = y:shape()
   if #out >= 1 and out[1] == p[1] then out[1] = batch end
   return out
end

-- infer(layer, s) -> output shape; or nil, text, is_message (text is the shape the layer needs
-- when is_message is false, else the layer's own message)
function M.infer(layer, s)
   local inner = rawget(layer, 'inner')
   if inner and layer._keras then return M.infer(inner, s) end   -- a built Keras-style layer
   local own = layer.output_shape
   if own ~= M.module_output_shape then
      local ok, out = pcall(own, layer, s)
      if not ok then return nil, strip_where(out), true end
      return out
   end
   local rule = rule_of(layer)
   if rule then
      local out, need = rule(layer, s)
      if out then return out end
      if need then return nil, need, false end
   end
   return probe(layer, s)
end

-- layer:output_shape(shape): the output shape for an input of `shape` (batch dim included),
-- raising at the caller's line what the layer refuses
function M.module_output_shape(self, s, extra)
   if extra ~= nil then   -- an argument past the last is refused, never dropped
      require('fastnn.tensor').too_many(self:_full_name() .. ':output_shape', 2, extra, 's')
   end
   local bad = M.check(s)
   if bad then error(('%s: output_shape: %s'):format(self:short_str(), bad), 2) end
   if type(self.build) == 'function' and not rawget(self, 'built') then
      local ok, err = pcall(self.build, self, s)
      if not ok then error(strip_where(err), 2) end
   end
   local out, why, is_msg = M.infer(self, s)
   if not out then
      if is_msg then error(('%s: cannot take input %s: %s'):format(self:short_str(), M.str(s), why), 2) end
      error(('%s: got input %s, needs %s'):format(self:short_str(), M.str(s), why), 2)
   end
   return out
end
local current = rawget(Module, 'output_shape')
if current == nil or current == rawget(Module, '_output_shape_stub') then
   rawset(Module, 'output_shape', M.module_output_shape)
end
M.module_output_shape = rawget(Module, 'output_shape')

return M
