-- nn.Graph: a model whose nodes are calls of layers on the outputs of other nodes (several
-- inlets and outlets, residual connections, one layer shared by several nodes). Made by
-- nn.GraphBuilder():build(outlets), not directly.
--   local y1, y2 = model(x1, x2)         -- or model{x1, x2}: one tensor per inlet, one out per outlet
--   model:predict{x1, x2}                --> {y1, y2}
-- fastnn.keras gives it the Keras-style methods of fastnn/keras/model.lua (keras/graph.lua: compile
-- with a loss per outlet and loss_weights, fit/evaluate with a Lua array of targets, summary listing
-- each node and what feeds it). Its children are the distinct layers, named by first use ('1.weight', '2.bias'), so
-- a shared layer's weights appear once. A node's error is re-raised at the caller's line,
-- prefixed 'Graph node 3 nn.Dense(4 -> 1): '.
local fnn_tensor = require 'fastnn.tensor'
local autograd = require 'fastnn.autograd'
local nn = require 'fastnn.nn'
local shape = require 'fastnn.nn.shape'
local is_tensor = fnn_tensor.is_tensor
local child_error = nn.Module._child_error
local fail = nn.Module._fail
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local unpack = unpack or table.unpack

local Graph = nn.ModuleList:extend('Graph')

-- spec (from GraphBuilder): nodes {kind = 'input'|'layer', inlet, pos, inputs, merge, name}, order
-- (the node indices to run, ascending), inlets/outlets (node indices), layers (distinct, by
-- position), shapes (per node)
function Graph:__init(spec)
   nn.ModuleList.__init(self, spec.layers)
   rawset(self, '_nodes', spec.nodes)
   rawset(self, '_order', spec.order)
   rawset(self, '_inlets', spec.inlets)
   rawset(self, '_outlets', spec.outlets)
   rawset(self, '_shapes', spec.shapes)
   local ins = {}
   for i, ni in ipairs(spec.inlets) do ins[i] = shape.copy(spec.shapes[ni]) end
   rawset(self, '_input_shapes', ins)
   rawset(self, 'built', true)
end

-- the text naming node k in messages: "node 3 (nn.Dense(4 -> 1))", "node 1 (input 1 [8,4])"
function Graph._label(node, k, layer, s)
   local name = node.name and (" '" .. node.name .. "'") or ''
   if node.kind == 'input' then
      return ('node %d%s (input %d %s)'):format(k, name, node.inlet, shape.str(s))
   end
   return ('node %d%s (%s)'):format(k, name, layer:short_str())
end

local function multi_probe(layer, ins)
   local xs = {}
   for i, s in ipairs(ins) do
      local p = shape.copy(s)
      p[1] = 1
      xs[i] = fnn_tensor.zeros(p)
   end
   local saved = shape.modes(layer)
   layer:train(false)
   local ok, y = pcall(autograd.no_grad, function() return layer:forward(unpack(xs)) end)
   shape.restore_modes(saved)
   if not ok then return nil, shape.strip_where(y) .. ' (probed with a batch of 1)', true end
   if not is_tensor(y) then return nil, 'its forward did not return a tensor', true end
   local out = y:shape()
   out[1] = ins[1][1]
   return out
end

local function list_str(shapes)
   local parts = {}
   for i, s in ipairs(shapes) do parts[i] = shape.str(s) end
   return table.concat(parts, ', ')
end

-- the output shape of each node in `order` given each inlet's shape; raises (level 0) naming
-- the node. layer_of(node) gives the node's layer; lazy layers are built here.
function Graph._infer(nodes, order, inlet_shapes, layer_of, op)
   local shapes = {}
   for _, k in ipairs(order) do
      local node = nodes[k]
      if node.kind == 'input' then
         shapes[k] = shape.copy(inlet_shapes[node.inlet])
      else
         local layer = layer_of(node)
         local ins = {}
         for j, src in ipairs(node.inputs) do ins[j] = shapes[src] end
         local out, why, is_msg
         if node.merge then
            local ok, r = pcall(layer.output_shape, layer, ins)
            if ok then out = r else why, is_msg = shape.strip_where(r), true end
         elseif #ins == 1 then
            local ok, err = true, nil
            if type(layer.build) == 'function' then ok, err = pcall(layer.build, layer, ins[1]) end
            if ok then out, why, is_msg = shape.infer(layer, ins[1])
            else why, is_msg = shape.strip_where(err), true end
         else
            out, why, is_msg = multi_probe(layer, ins)
         end
         if not out then
            local label = Graph._label(node, k, layer)
            if is_msg then fail(('%s: %s cannot take input %s: %s'):format(op, label, list_str(ins), why)) end
            fail(('%s: %s got input %s, needs %s'):format(op, label, list_str(ins), why))
         end
         shapes[k] = out
      end
   end
   return shapes
end

local function run(self, xs)
   local nodes, values = rawget(self, '_nodes'), {}
   for i, k in ipairs(rawget(self, '_inlets')) do values[k] = xs[i] end
   for _, k in ipairs(rawget(self, '_order')) do
      local node = nodes[k]
      if node.kind ~= 'input' then
         rawset(self, '_at', k)
         local layer = self[node.pos]
         local inputs = node.inputs
         local y
         if node.merge then
            local args = {}
            for j = 1, #inputs do args[j] = values[inputs[j]] end
            y = layer:forward(args)
         elseif #inputs == 1 then
            y = layer:forward(values[inputs[1]])
         else
            local args = {}
            for j = 1, #inputs do args[j] = values[inputs[j]] end
            y = layer:forward(unpack(args, 1, #inputs))
         end
         values[k] = y
      end
   end
   local outs = {}
   for i, k in ipairs(rawget(self, '_outlets')) do outs[i] = values[k] end
   return outs
end

-- forward(x1, x2, ...) or forward{x1, x2, ...} -> y1, y2, ... (one per outlet). A value past the
-- inlets (past the table of the table form) is refused, not dropped; trailing nils are none
function Graph:forward(...)
   local xs = ...
   local n_in = #rawget(self, '_inlets')
   local n = select('#', ...)
   while n > 0 and select(n, ...) == nil do n = n - 1 end
   local tabled = n >= 1 and type(xs) == 'table' and not is_tensor(xs)
   for i = (tabled and 1 or n_in) + 1, n do
      local v = select(i, ...)
      if v ~= nil then
         too_many('Graph:forward', i, v, tabled and '{x1, ..., xn}' or ('%d inputs, one per inlet'):format(n_in))
      end
   end
   if not tabled then xs = {...} end
   if #xs ~= n_in then
      error(('Graph: the model has %d inlets, got %d inputs'):format(n_in, #xs), 2)
   end
   for i = 1, n_in do
      if not is_tensor(xs[i]) then
         error(('Graph: input %d is a %s, expected a tensor'):format(i, type(xs[i])), 2)
      end
   end
   local ok, outs = pcall(run, self, xs)
   if ok then return unpack(outs) end
   local k = rawget(self, '_at')
   local node = rawget(self, '_nodes')[k]
   local msg = child_error(('Graph node %d %s: '):format(k, self[node.pos]:short_str()), outs)
   if msg == nil then error(outs, 0) end
   error(msg, 2)
end

-- output_shape(): the outlets' shapes (a Lua array); output_shape{s1, s2, ...}: for these inlet shapes
local output_shape = nn.Module._guarded(function(self, ins)
   local nodes, outlets = rawget(self, '_nodes'), rawget(self, '_outlets')
   local shapes = rawget(self, '_shapes')
   if ins ~= nil then
      if type(ins) ~= 'table' or type(ins[1]) ~= 'table' or #ins ~= #rawget(self, '_inlets') then
         fail(('Graph:output_shape: expected a Lua array of %d shapes, one per inlet'):format(#rawget(self, '_inlets')))
      end
      shapes = Graph._infer(nodes, rawget(self, '_order'), ins, function(node) return self[node.pos] end,
                            'Graph:output_shape')
   end
   local out = {}
   for i, k in ipairs(outlets) do out[i] = shape.copy(shapes[k]) end
   return out
end)
function Graph:output_shape(ins, extra)
   if extra ~= nil then too_many('Graph:output_shape', 2, extra, 'shapes') end
   return output_shape(self, ins)   -- a tail call: its errors stand at the caller's line
end

function Graph:short_str()
   return ('nn.Graph(%d inlets, %d outlets, %d nodes)'):format(#rawget(self, '_inlets'), #rawget(self, '_outlets'),
                                                            #rawget(self, '_order'))
end

return Graph
