-- nn.GraphBuilder(): wires layers into an nn.Graph by node (the RustyML seed's GraphBuilder).
--   local b = nn.GraphBuilder()
--   local input = b:input{8, 4}                               -- an inlet; the batch dim included
--   local hidden = b:add(nn.Dense(4, 'relu'), {input})        -- a node: the layer called on nodes
--   local residual = b:add(nn.Add(), {input, hidden})         -- a residual connection
--   local head = b:add(nn.Dense(1), {residual})
--   local model = b:build{head}                               -- outlets; an nn.Graph
-- add(layer, nodes, {name}) takes one node or a Lua array of them (a merge layer gets them as a
-- list, another layer as arguments); the same layer added twice is one layer with one set of
-- weights, called at two nodes. input(shape, {name}) and add return nodes; nothing is checked
-- until build, which refuses, before any data moves and naming the node:
--   a node from another builder, something that is not a node (an unknown node), an inlet that
--   feeds no outlet, an outlet not reachable from the inlets (a node with no inputs on its path),
--   a merge given one input, and shapes a layer does not take (each merge layer's shape rule,
--   the got/needs check of Sequential:build for the others).
-- Keras-style layers are built at build from the shape that reaches their first node.
local nn = require 'fastnn.nn'
local shape = require 'fastnn.nn.shape'
local Graph = nn.Graph
local is_module = nn.Module.is_module
local fail = nn.Module._fail
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped

local GraphBuilder = require('fastnn.class')('GraphBuilder')
local Node = require('fastnn.class')('Node')
function Node:__tostring()
   if self.kind == 'input' then return ('GraphBuilder node %d (input %d)'):format(self.index, self.inlet) end
   return ('GraphBuilder node %d (%s)'):format(self.index, self.layer:short_str())
end
GraphBuilder.Node = Node

function GraphBuilder.__new(cls, extra)
   if extra ~= nil then too_many('nn.GraphBuilder', 1, extra, '') end
   return setmetatable({_nodes = {}, _inlets = {}}, cls)
end

local options = require 'fastnn.options'
local DECL = {}
for _, op in ipairs{'input', 'add'} do
   DECL[op] = options.declare('GraphBuilder:' .. op, {
      {'name', 'string', nil, 'the node\'s name (in summary() and errors)'},
   })
end
local function name_of(op, opts)
   local o = DECL[op]:check(opts, 3)   -- 1 check, 2 here, 3 the method, 4 the user
   return o.name
end

-- input(shape, {name}): an inlet taking tensors of `shape` (batch dim included)
function GraphBuilder:input(s, opts, extra)
   if extra ~= nil then too_many('GraphBuilder:input', 3, extra, 'shape, opts') end
   local bad = shape.check(s)
   if bad then error(('GraphBuilder:input: %s'):format(bad), 2) end
   local node = setmetatable({builder = self, index = #self._nodes + 1, kind = 'input', inlet = #self._inlets + 1,
                              shape = shape.copy(s), name = name_of('input', opts)}, Node)
   self._nodes[node.index] = node
   self._inlets[node.inlet] = node
   return node
end

-- add(layer, nodes, {name}): a node calling layer on the outputs of `nodes`
function GraphBuilder:add(layer, inputs, opts, extra)
   if extra ~= nil then too_many('GraphBuilder:add', 4, extra, 'layer, nodes, opts') end
   if not is_module(layer) then
      error(('GraphBuilder:add: layer is a %s, expected a module (nn.Dense(4), nn.Add(), ...)'):format(type(layer)), 2)
   end
   local refs = {}
   if getmetatable(inputs) == Node or type(inputs) ~= 'table' then
      if inputs ~= nil then refs[1] = inputs end
   else
      for i = 1, table.maxn(inputs) do refs[i] = inputs[i] end
   end
   local node = setmetatable({builder = self, index = #self._nodes + 1, kind = 'layer', layer = layer, refs = refs,
                              name = name_of('add', opts)}, Node)
   self._nodes[node.index] = node
   return node
end

local function label(node)
   local name = node.name and (" '" .. node.name .. "'") or ''
   if node.kind == 'input' then
      return ('node %d%s (input %d %s)'):format(node.index, name, node.inlet, shape.str(node.shape))
   end
   return ('node %d%s (%s)'):format(node.index, name, node.layer:short_str())
end

-- a reference must be a node of this builder
local function check_ref(self, op, ref, where)
   if getmetatable(ref) ~= Node then
      local what = ref == nil and 'nil' or type(ref) == 'table' and 'a table' or
                   ('%s %s'):format(type(ref), tostring(ref))
      fail(('%s: %s is an unknown node (%s, not a node returned by input or add)'):format(op, where, what))
   end
   if ref.builder ~= self then
      fail(('%s: %s is %s of another GraphBuilder (a foreign node)'):format(op, where, label(ref)))
   end
end

local function build(self, outlets)
   local op = 'GraphBuilder:build'
   if getmetatable(outlets) == Node or type(outlets) ~= 'table' then outlets = {outlets} end
   local n_out = table.maxn(outlets)
   if n_out == 0 then fail(op .. ': expected the outlets, a Lua array of nodes') end
   if #self._inlets == 0 then fail(op .. ': the graph has no inlets; declare one with input(shape)') end
   local nodes = self._nodes
   -- 1. every reference is a node of this builder
   for _, node in ipairs(nodes) do
      if node.kind == 'layer' then
         for j = 1, table.maxn(node.refs) do
            check_ref(self, op, node.refs[j], ('input %d of %s'):format(j, label(node)))
         end
      end
   end
   for j = 1, n_out do check_ref(self, op, outlets[j], ('outlet %d'):format(j)) end
   -- 2. every outlet is computable from the inlets: no node without inputs on its path
   local reach = {}
   for _, node in ipairs(nodes) do
      local ok = node.kind == 'input' or #node.refs > 0
      if node.kind == 'layer' then
         for _, r in ipairs(node.refs) do ok = ok and reach[r.index] end
      end
      reach[node.index] = ok
   end
   for j = 1, n_out do
      local o = outlets[j]
      if not reach[o.index] then
         fail(('%s: outlet %d, %s, is not reachable from the inlets'):format(op, j, label(o)))
      end
   end
   -- 3. every inlet feeds an outlet
   local needed = {}
   local function mark(node)
      if needed[node.index] then return end
      needed[node.index] = true
      if node.kind == 'layer' then for _, r in ipairs(node.refs) do mark(r) end end
   end
   for j = 1, n_out do mark(outlets[j]) end
   for _, inlet in ipairs(self._inlets) do
      if not needed[inlet.index] then
         fail(('%s: inlet %d, %s, feeds no outlet'):format(op, inlet.inlet, label(inlet)))
      end
   end
   -- 4. the nodes to run, the distinct layers, the shapes
   local order, layers, pos_of, specs = {}, {}, {}, {}
   for _, node in ipairs(nodes) do
      if needed[node.index] then
         order[#order + 1] = node.index
         local spec = {kind = node.kind, inlet = node.inlet, name = node.name}
         if node.kind == 'layer' then
            local layer = node.layer
            if not pos_of[layer] then
               layers[#layers + 1] = layer
               pos_of[layer] = #layers
            end
            spec.pos = pos_of[layer]
            spec.inputs = {}
            for j, r in ipairs(node.refs) do spec.inputs[j] = r.index end
            spec.merge = layer._rule ~= nil or (#node.refs ~= 1 and layer.output_shape ~= shape.module_output_shape)
         end
         specs[node.index] = spec
      end
   end
   local inlet_shapes = {}
   for i, inlet in ipairs(self._inlets) do inlet_shapes[i] = inlet.shape end
   local shapes = Graph._infer(specs, order, inlet_shapes, function(spec) return layers[spec.pos] end, op)
   local inlets, outs = {}, {}
   for i, inlet in ipairs(self._inlets) do inlets[i] = inlet.index end
   for j = 1, n_out do outs[j] = outlets[j].index end
   return Graph{layers = layers, nodes = specs, order = order, inlets = inlets, outlets = outs, shapes = shapes}
end

-- build(outlets): the nn.Graph from the inlets to these nodes (one node or a Lua array)
local guarded_build = nn.Module._guarded(build)
function GraphBuilder:build(outlets, extra)
   if extra ~= nil then too_many('GraphBuilder:build', 2, extra, 'outlets') end
   return guarded_build(self, outlets)   -- a tail call: its errors stand at the caller's line
end

function GraphBuilder:__tostring()
   return ('nn.GraphBuilder(%d inlets, %d nodes)'):format(#self._inlets, #self._nodes)
end

return GraphBuilder
