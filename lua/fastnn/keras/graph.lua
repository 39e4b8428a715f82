-- fastnn.keras.graph: nn.Graph (made by nn.GraphBuilder) as a Keras-style model, installed by
-- fastnn.keras when nn.Graph loads: compile with a loss per outlet and loss_weights, fit/evaluate
-- with a Lua array of targets, predict with one tensor per inlet, and a summary listing each node
-- and what feeds it. The methods themselves are fastnn/keras/model.lua's.
local shape = require 'fastnn.nn.shape'
local model = require 'fastnn.keras.model'

local M = {}

-- summary's rows: a node per row, its output shape, its parameters (a shared layer's once) and
-- the nodes that feed it
local function rows(self)
   local nodes, shapes, out, seen = rawget(self, '_nodes'), rawget(self, '_shapes'), {}, {}
   for _, k in ipairs(rawget(self, '_order')) do
      local node = nodes[k]
      local s = shapes[k]
      if node.kind == 'input' then
         out[#out + 1] = {('%d input %d%s'):format(k, node.inlet, node.name and (' ' .. node.name) or ''),
                          shape.keras_str(s), '0', ''}
      else
         local layer = self[node.pos]
         local params = seen[layer] and '0 (shared)' or model.grouped(layer:num_parameters())
         seen[layer] = true
         local from = {}
         for j, src in ipairs(node.inputs) do from[j] = tostring(src) end
         out[#out + 1] = {('%d %s%s'):format(k, node.name and (node.name .. ' ') or '', layer:short_str()),
                          shape.keras_str(s), params, 'node ' .. table.concat(from, ', ')}
      end
   end
   return out, 'graph', 'Connected to'
end

function M.install(Graph)
   model.install(Graph)
   Graph._keras_single_input, Graph._keras_single_output = false, false
   function Graph:_keras_arity() return #rawget(self, '_inlets'), #rawget(self, '_outlets') end
   function Graph:_keras_forward(xs) return {self:forward(xs)} end
   function Graph:_keras_build() end   -- built by GraphBuilder
   Graph._keras_rows = rows
   return Graph
end

return M
