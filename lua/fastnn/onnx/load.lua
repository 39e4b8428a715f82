-- fastnn.onnx.load: an ONNX file back into a module that runs on fastnn's kernels.
--   local m = fnn.onnx.load('mlp.onnx')       -- what fnn.onnx.export or torch.onnx.export wrote
--   local y = m(x)                            -- m:to_device(fnn.Device('cuda', 0)) moves it
-- The file is decoded in C (core/io/onnx.c, protobuf-c); each node is run by the `import` of its
-- operator's entry in fastnn.onnx.ops, the table the exporter writes from, so an operator comes in
-- where it goes out. Every node is checked at load: an operator outside the table, or outside ONNX's
-- default domain, is refused by operator name and node name before anything runs.
-- Float initializers become the module's parameters under their ONNX names (PyTorch's '0.weight'),
-- 0-dim ones and those a node reads as state (BatchNormalization's running statistics) buffers;
-- integer ones (shapes) are kept as CPU tensors and read as plain numbers.
local ffi = require 'ffi'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local tensor = require 'fastnn.tensor'
local ops = require 'fastnn.onnx.ops'   -- the operator table the exporter writes from
local C, show = tensor.C, require('fastnn.options').describe

local M = {}

-- ONNX's default domain at opsets 13 (one-axis Softmax) to 21
local OPSET_MIN, OPSET_MAX = 13, 21
local ATTR_FLOAT, ATTR_INT, ATTR_STRING, ATTR_TENSOR, ATTR_FLOATS, ATTR_INTS, ATTR_STRINGS = 1, 2, 3, 4, 6, 7, 8

-- op_type -> import function, op_type -> the input positions that hold state rather than weights
-- (BatchNormalization's running statistics: the loader makes those initializers buffers), and
-- op_type -> the check of a node's attributes at load
local function importers()
   local by_type, state, checks = {}, {}, {}
   for _, entry in pairs(ops) do
      if type(entry) == 'table' and entry.import then
         for op_type, fn in pairs(entry.import) do by_type[op_type] = fn end
         for op_type, positions in pairs(entry.buffers or {}) do state[op_type] = positions end
         for op_type, fn in pairs(entry.check or {}) do checks[op_type] = fn end
      end
   end
   return by_type, state, checks
end

local function last_error() return ffi.string(C.fnn_last_error()) end

-- a new CPU tensor the C side made into out
local function take(fill, what)
   local out = tensor.new()
   if fill(out) ~= 0 then error(what .. ': ' .. last_error(), 0) end
   return tensor.done(out)
end

-- node i's attributes: name -> number, list, string or tensor
local function attributes(model, i, where)
   local attrs = {}
   local ty, num, count = ffi.new('int[1]'), ffi.new('double[1]'), ffi.new('int64_t[1]')
   for a = 0, C.fnn_onnx_node_attrs(model, i) - 1 do
      local name = ffi.string(C.fnn_onnx_attr(model, i, a, ty, num, count))
      local t, n = ty[0], tonumber(count[0])
      if t == ATTR_FLOAT or t == ATTR_INT then
         attrs[name] = tonumber(num[0])
      elseif t == ATTR_FLOATS or t == ATTR_INTS then
         local list = {}
         for k = 1, n do list[k] = tonumber(C.fnn_onnx_attr_at(model, i, a, k - 1)) end
         attrs[name] = list
      elseif t == ATTR_STRING then
         local bytes = {}
         for k = 1, n do bytes[k] = string.char(tonumber(C.fnn_onnx_attr_at(model, i, a, k - 1))) end
         attrs[name] = table.concat(bytes)
      elseif t == ATTR_TENSOR then
         attrs[name] = take(function(out) return C.fnn_onnx_attr_tensor(out, model, i, a) end, where)
      elseif t == ATTR_STRINGS then   -- (LSTM's activations: present, unread; its check refuses it)
         attrs[name] = {strings = true}
      else
         error(('%s: attribute %s has ONNX type %d, which fnn.onnx.load does not read'):format(where, name, t), 0)
      end
   end
   return attrs
end

-- the module class, made on first use (fastnn.nn loads after fastnn.onnx)
local OnnxModel
local function model_class()
   if OnnxModel then return OnnxModel end
   local nn = require('fastnn').nn
   OnnxModel = nn.Module:extend('OnnxModel')
   function OnnxModel:short_str()
      return ('nn.OnnxModel(%s: %d nodes, %d -> %d values)'):format(self._path, #self._nodes, #self._inputs,
                                                                    #self._outputs)
   end
   -- the graph's outputs from its inputs, in the order the file names them
   function OnnxModel:forward(...)
      local n = select('#', ...)
      if n ~= #self._inputs then
         error(('%s: takes %d inputs (%s), got %d'):format(self:short_str(), #self._inputs,
               table.concat(self._inputs, ', '), n), 2)
      end
      local values = {}
      for k, name in ipairs(self._inputs) do
         local x = select(k, ...)
         if not tensor.is_tensor(x) then
            error(('%s: input %d (%s) is %s, expected a tensor'):format(self:short_str(), k, name, show(x)), 2)
         end
         values[name] = x
      end
      for name, key in pairs(self._weights) do values[name] = self[key]:tensor() end
      for name, key in pairs(self._consts) do values[name] = self[key] end
      for _, node in ipairs(self._nodes) do
         local args = {}
         for k, name in ipairs(node.inputs) do
            if name ~= '' then
               args[k] = values[name]
               if args[k] == nil then
                  error(("%s: node '%s' (%s) reads '%s', which no earlier node made"):format(self:short_str(),
                        node.name, node.op_type, name), 2)
               end
            end
         end
         local ok, r = pcall(function() return {node.run(node, args)} end)
         if not ok then
            error(("%s: node '%s' (%s): %s"):format(self:short_str(), node.name, node.op_type,
                  tostring(r):gsub('^[^:]*:%d+: ', '')), 2)
         end
         for k, name in ipairs(node.outputs) do if name ~= '' then values[name] = r[k] end end
      end
      local out = {}
      for k, name in ipairs(self._outputs) do out[k] = values[name] end
      return unpack(out, 1, #self._outputs)
   end
   return OnnxModel
end

-- load(path): see the top of this file
function M.load(path, extra)
   if extra ~= nil then too_many('onnx.load', 2, extra, 'path') end
   if type(path) ~= 'string' or path == '' then
      error(('onnx.load: path is %s, expected a file name'):format(show(path)), 2)
   end
   local handle = ffi.new('fnn_onnx_model*[1]')
   if C.fnn_onnx_load(handle, path) ~= 0 then error(last_error(), 2) end
   local model = ffi.gc(handle[0], C.fnn_onnx_free)
   local where = 'onnx.load: ' .. path
   local opset = tonumber(C.fnn_onnx_opset(model))
   if opset < OPSET_MIN or opset > OPSET_MAX then
      error(('%s: opset %d of the default domain (fnn.onnx.load reads %d to %d)'):format(where, opset, OPSET_MIN,
            OPSET_MAX), 2)
   end
   local run_of, state_at, check_of = importers()
   local ok, m = pcall(function()
      local self = model_class()()
      rawset(self, '_path', path:match('[^/]*$'))
      -- the initializers some node reads as state (running statistics): buffers
      local as_state = {}
      for i = 0, C.fnn_onnx_count(model, 0) - 1 do
         for _, k in ipairs(state_at[ffi.string(C.fnn_onnx_node_text(model, i, 0))] or {}) do
            as_state[ffi.string(C.fnn_onnx_node_value(model, i, 0, k - 1))] = true
         end
      end
      -- initializers: float ones parameters (0-dim, or state: buffers), integer ones plain constants
      local weights, consts, known = {}, {}, {}
      local cname = ffi.new('const char*[1]')
      for k = 0, C.fnn_onnx_count(model, 1) - 1 do
         local t = take(function(out) return C.fnn_onnx_init_tensor(out, model, k, cname) end, where)
         local name = ffi.string(cname[0])
         known[name] = true
         if t:dtype() == 'float32' and t:dim() > 0 and not as_state[name] then
            self:register_parameter(name, require('fastnn.autograd').Param(t))
            weights[name] = name
         elseif t:dtype() == 'float32' then
            self:register_buffer(name, t)
            consts[name] = name
         else
            rawset(self, name, t)
            consts[name] = name
         end
      end
      rawset(self, '_weights', weights)
      rawset(self, '_consts', consts)
      -- the graph's inputs (an old file lists its initializers among them) and outputs
      local inputs, outputs = {}, {}
      for k = 0, C.fnn_onnx_count(model, 2) - 1 do
         local name = ffi.string(C.fnn_onnx_graph_value(model, 0, k))
         if not known[name] then inputs[#inputs + 1] = name end
      end
      for k = 0, C.fnn_onnx_count(model, 3) - 1 do outputs[#outputs + 1] = ffi.string(C.fnn_onnx_graph_value(model, 1, k)) end
      rawset(self, '_inputs', inputs)
      rawset(self, '_outputs', outputs)
      -- the nodes, every one checked before anything runs
      local nodes = {}
      for i = 0, C.fnn_onnx_count(model, 0) - 1 do
         local op_type = ffi.string(C.fnn_onnx_node_text(model, i, 0))
         local name = ffi.string(C.fnn_onnx_node_text(model, i, 1))
         local domain = ffi.string(C.fnn_onnx_node_text(model, i, 2))
         if name == '' then name = ('%s_%d'):format(op_type, i) end
         if domain ~= '' and domain ~= 'ai.onnx' then
            error(("%s: node '%s' is operator %s of domain '%s' (fnn.onnx.load reads ONNX's default domain)"):format(
                  where, name, op_type, domain), 0)
         end
         local run = run_of[op_type]
         if not run then
            local known_ops = {}
            for t in pairs(run_of) do known_ops[#known_ops + 1] = t end
            table.sort(known_ops)
            error(("%s: operator %s (node '%s') is not supported; fnn.onnx.load reads %s"):format(where, op_type,
                  name, table.concat(known_ops, ', ')), 0)
         end
         local node = {op_type = op_type, name = name, run = run, inputs = {}, outputs = {},
                       attrs = attributes(model, i, ("%s: node '%s'"):format(where, name))}
         for k = 1, C.fnn_onnx_node_arity(model, i, 0) do node.inputs[k] = ffi.string(C.fnn_onnx_node_value(model, i, 0, k - 1)) end
         for k = 1, C.fnn_onnx_node_arity(model, i, 1) do node.outputs[k] = ffi.string(C.fnn_onnx_node_value(model, i, 1, k - 1)) end
         node.attr = function(attr_name, default)
            local v = node.attrs[attr_name]
            if v == nil then return default end
            return v
         end
         if check_of[op_type] then
            local fine, why = pcall(check_of[op_type], node)
            if not fine then
               error(("%s: operator %s (node '%s'): %s"):format(where, op_type, name, tostring(why)), 0)
            end
         end
         nodes[#nodes + 1] = node
      end
      rawset(self, '_nodes', nodes)
      return self
   end)
   if not ok then error(m, 2) end
   return m
end

return M
