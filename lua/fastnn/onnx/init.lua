-- fastnn.onnx: models out to ONNX (onnxruntime, TensorRT, browsers).
--   fnn.onnx.export(model, example_inputs, 'mlp.onnx', {dynamic_batch = true})
-- export traces the model: it runs forward once on the example inputs (a tensor or a list of them)
-- in eval mode, then walks the autograd graph that forward recorded from the outputs back to the
-- inputs and the parameters, and writes each op through its entry in fastnn.onnx.ops (opset 17).
-- Parameters become initializers named as named_parameters() names them. The ONNX file is
-- encoded in C (core/io/onnx.c, protobuf-c). An op the table lacks is refused by name, with the
-- path of the module it is in (each module's forward is wrapped during the trace to note its output).
-- Covered so far: MLPs (linear, matmul, elementwise add/sub/mul/div, relu, tanh, sigmoid, gelu,
-- silu, leaky_relu, elu, softmax, log_softmax, flatten/reshape) and convolutional nets (conv1d-3d,
-- max and avg pooling; the nodes' numbers through fnn_node_attr's conv and pool readers), and
-- recurrent nets (nn.LSTM and nn.GRU as ONNX's LSTM and GRU, one node per layer: written whole from
-- the module, its entry's export_call, since the direction and gate layout are the module's).
-- fnn.onnx.load (load.lua) reads such files back, and torch.onnx.export's of the same family.
local ffi = require 'ffi'
local too_many = require('fastnn.tensor').too_many   -- an argument past the last is refused, never dropped
local tensor = require 'fastnn.tensor'
local autograd = require 'fastnn.autograd'
local options = require 'fastnn.options'
local ops = require 'fastnn.onnx.ops'   -- one entry per op: what it becomes, and how it is read back
local C, show = tensor.C, options.describe

local M = {ops = ops, load = require('fastnn.onnx.load').load}

local EXPORT = options.declare('onnx.export', {
   {'opset', 'integer', 17, 'the ONNX opset the file declares', min = 17, max = 17},
   {'input_names', 'table', nil, "the graph inputs' names (default input, or input1, input2, ...)"},
   {'output_names', 'table', nil, "the graph outputs' names (default output, or output1, ...)"},
   {'dynamic_batch', 'boolean', false, 'the first dimension of every input and output is free (named batch)'},
})

local function key(node) return tostring(ffi.cast('uintptr_t', node)) end

-- a shape the C side writes into a buffer, returning its ndim: fill(buf)
local function shape_of(fill)
   local buf = ffi.new('int64_t[8]')
   local nd = fill(buf)
   local out = {}
   for d = 1, nd do out[d] = tonumber(buf[d - 1]) end
   return out
end

-- the graph being written: ONNX names for traced nodes, nodes and initializers through the C model
local Graph = {}
Graph.__index = Graph

local function check(ok_rc, what)
   if ok_rc ~= 0 then error('onnx.export: ' .. what .. ': ' .. ffi.string(C.fnn_last_error()), 0) end
end

function Graph:fresh(hint)
   self.count = self.count + 1
   return ('%s_%d'):format(hint, self.count)
end

-- a node with k outputs (default 1): their names
function Graph:node(op_type, inputs, attrs, k)
   k = k or 1
   local out = self:fresh(op_type)
   local ins = ffi.new('const char*[?]', math.max(#inputs, 1))
   local keep = {}
   for i, name in ipairs(inputs) do keep[i] = name; ins[i - 1] = name end
   local names = {out}
   for j = 2, k do names[j] = out .. '_' .. (j - 1) end
   local outs = ffi.new('const char*[?]', k, names)
   check(C.fnn_onnx_node(self.model, op_type, out, #inputs, ins, k, outs), op_type)
   for name, v in pairs(attrs or {}) do
      if type(v) == 'table' and v.float then
         check(C.fnn_onnx_attr_float(self.model, name, v.float), op_type .. ' ' .. name)
      elseif type(v) == 'table' and v.string then
         check(C.fnn_onnx_attr_string(self.model, name, v.string), op_type .. ' ' .. name)
      elseif type(v) == 'table' then
         check(C.fnn_onnx_attr_ints(self.model, name, #v, ffi.new('int64_t[?]', #v, v)), op_type .. ' ' .. name)
      else
         assert(v == math.floor(v), 'an integer attribute; a float one is written {float = x}')
         check(C.fnn_onnx_attr_int(self.model, name, v), op_type .. ' ' .. name)
      end
   end
   return unpack(names, 1, k)
end

-- t (a tensor a module call returned, written whole by its entry's export_call) is the ONNX value name
function Graph:name_of(t, name)
   if tensor.is_tensor(t) and t.node ~= nil then self.names[key(t.node)] = name end
end

function Graph:initializer(hint, t)
   local name = self:fresh(hint)
   check(C.fnn_onnx_initializer(self.model, name, t), name)
   return name
end

-- a scalar (0-dim: fnn.onnx.load keeps those as buffers, not parameters)
-- a buffer of the model (a batch norm's running statistics) as an initializer under its dotted
-- name, written once; t must be one of the model's buffers
function Graph:buffer(t)
   for _, pair in ipairs(self.buffers) do
      if rawequal(pair[2], t) then
         if not self.written[pair[1]] then
            check(C.fnn_onnx_initializer(self.model, pair[1], t), pair[1])
            self.written[pair[1]] = true
         end
         return pair[1]
      end
   end
   error('onnx.export: a tensor read as state is not among the model\'s buffers', 0)
end

function Graph:constant(v) return self:initializer('const', require('fastnn').tensor(v)) end
function Graph:ints_constant(list) return self:initializer('shape', require('fastnn').long(list)) end

-- the ONNX name of node n's output, writing n (and what it reads) first; where is the module whose
-- forward made n (or, for an op inside a module, the nearest consumer that one made)
function Graph:value(n, user, where)
   local k = key(n)
   if self.names[k] then return self.names[k] end
   where = self.made_by[k] or where
   -- a tensor a module returned whose class one entry writes whole (nn.LSTM): that call, once
   local call = self.calls[k]
   local whole = call and self.whole[getmetatable(call.module)]
   if whole then
      whole.export_call(self, call)
      if self.names[k] then return self.names[k] end
   end
   local op = ffi.string(C.fnn_node_op(n))
   if op == 'Param' then
      error(('onnx.export: %s reads a tensor that is neither an input nor a parameter of the model'):format(user), 0)
   end
   local entry = ops[op]
   if not (entry and entry.export) then   -- (an entry may only import: Identity, Constant, Transpose)
      local known = {}
      for name, e in pairs(ops) do if type(e) == 'table' and e.export then known[#known + 1] = name end end
      table.sort(known)
      error(("onnx.export: the op '%s'%s has no ONNX mapping (fastnn.onnx.ops maps %s)"):format(op,
            where and (' in module ' .. where) or '', table.concat(known, ', ')), 0)
   end
   local info = {op = op, inputs = {}, in_shapes = {}, out_shape = shape_of(function(b) return C.fnn_node_output_shape(n, b) end),
                 module = self.module_of[k]}
   info.attr = function(name)
      local v = ffi.new('double[1]')
      check(C.fnn_node_attr(n, name, v), op)
      return tonumber(v[0])
   end
   for i = 1, C.fnn_node_inputs(n) do
      local src = C.fnn_node_input(n, i - 1)
      info.in_shapes[i] = shape_of(function(b) return C.fnn_node_input_shape(n, i - 1, b) end)
      if src ~= nil then
         info.inputs[i] = self:value(src, op, where)
      elseif not (entry.optional and entry.optional[i] and #info.in_shapes[i] == 0) then   -- absent: no shape
         error(("onnx.export: input %d of '%s' is plain data (a constant the trace cannot name); make it a "
                .. 'parameter or an input'):format(i, op), 0)
      end
   end
   local out = entry.export(self, info)
   self.names[k] = out
   return out
end

local function names_for(given, n, default, what)
   if given == nil then
      local out = {}
      for i = 1, n do out[i] = n == 1 and default or default .. i end
      return out
   end
   if #given ~= n then
      error(('onnx.export: %s has %d names for %d %ss'):format(what, #given, n, default), 3)
   end
   return given
end

-- export(model, inputs, path, opts): see the top of this file
function M.export(model, inputs, path, opts, extra)
   if extra ~= nil then too_many('onnx.export', 5, extra, 'model, inputs, path, opts') end
   if type(model) ~= 'table' or type(model.forward) ~= 'function' then
      error(('onnx.export: model is %s, expected a module'):format(show(model)), 2)
   end
   if tensor.is_tensor(inputs) then inputs = {inputs} end
   if type(inputs) ~= 'table' or #inputs == 0 then
      error(('onnx.export: example_inputs is %s, expected a tensor or a list of tensors'):format(show(inputs)), 2)
   end
   for i, x in ipairs(inputs) do
      if not tensor.is_tensor(x) then
         error(('onnx.export: example input %d is %s, expected a tensor'):format(i, show(x)), 2)
      end
   end
   if type(path) ~= 'string' or path == '' then
      error(('onnx.export: path is %s, expected a file name'):format(show(path)), 2)
   end
   local o = EXPORT:check(opts, 2)
   local in_names = names_for(o.input_names, #inputs, 'input', 'input_names')

   -- the trace: inputs as leaves of their own, every parameter unfrozen (a frozen one hands out
   -- detached tensors, which the graph would not show), eval mode; all put back afterwards
   local params = model:named_parameters()
   local frozen = {}
   for i, pair in ipairs(params) do
      frozen[i] = pair[2]:frozen()
      pair[2]:unfreeze()
   end
   local was_training = model.training
   model:eval()
   -- each module's forward, wrapped for the trace: the node of its output -> the module, so a refusal
   -- can say where the op is ('2 (nn.Softmax)'); innermost first, as inner forwards return first
   -- (and the call itself: its arguments and results, for a module an entry writes whole)
   local made_by, module_of, calls, wrapped = {}, {}, {}, {}
   local whole = {}   -- module class -> the entry that writes its calls whole
   for _, entry in pairs(ops) do
      if type(entry) == 'table' and entry.module_class then whole[require('fastnn').nn[entry.module_class]] = entry end
   end
   for _, pair in ipairs(model:named_modules()) do
      local path, m = pair[1], pair[2]
      local own, forward = rawget(m, 'forward'), m.forward
      local label = (path == '' and 'the model' or path) .. ' (' .. tostring(m._full_name and m:_full_name() or '?') .. ')'
      rawset(m, 'forward', function(self, ...)
         local r = {forward(self, ...)}
         local call = {module = m, args = {...}, returns = r}
         local function note(y)
            if not (tensor.is_tensor(y) and y.node ~= nil) then return end
            if not made_by[key(y.node)] then made_by[key(y.node)], module_of[key(y.node)] = label, m end
            -- a module written whole claims its results over an inner module's (out_proj's Linear)
            if whole[getmetatable(m)] and not calls[key(y.node)] then calls[key(y.node)] = call end
         end
         for _, y in ipairs(r) do   -- a returned state {h, c} too
            if type(y) == 'table' and not tensor.is_tensor(y) then for _, t in ipairs(y) do note(t) end else note(y) end
         end
         return unpack(r, 1, table.maxn(r))
      end)
      wrapped[#wrapped + 1] = {m, own}
   end
   -- float inputs become leaves of their own; an int64 input (token ids) has no node, and is
   -- known by the tensor itself to the entries that read ids (nn.Embedding's)
   local leaves, traced, id_inputs = {}, {}, {}
   for i, x in ipairs(inputs) do
      if tensor.is_tensor(x) and x:dtype() == 'int64' then
         traced[i] = x
         id_inputs[x] = in_names[i]
      else
         leaves[i] = autograd.Param(x)
         traced[i] = leaves[i]:tensor()
      end
   end
   local ok, outputs = pcall(function() return {autograd.enable_grad(function() return model(unpack(traced)) end)} end)
   for i, pair in ipairs(params) do if frozen[i] then pair[2]:freeze() end end
   for _, w in ipairs(wrapped) do rawset(w[1], 'forward', w[2]) end
   if was_training then model:train() end
   if not ok then error(outputs, 0) end
   if tensor.is_tensor(outputs[1]) == false and type(outputs[1]) == 'table' then outputs = outputs[1] end
   -- a state among the outputs ({h, c} of an LSTM) is its tensors, in order
   local flat = {}
   for _, y in ipairs(outputs) do
      if type(y) == 'table' and not tensor.is_tensor(y) then
         for _, t in ipairs(y) do flat[#flat + 1] = t end
      else
         flat[#flat + 1] = y
      end
   end
   outputs = flat
   local out_names = names_for(o.output_names, #outputs, 'output', 'output_names')

   local handle = ffi.new('fnn_onnx_model*[1]')
   if C.fnn_onnx_new(handle, 'fastnn', o.opset) ~= 0 then
      error('onnx.export: ' .. ffi.string(C.fnn_last_error()), 2)
   end
   local g = setmetatable({model = ffi.gc(handle[0], C.fnn_onnx_free), names = {}, count = 0, made_by = made_by,
                           module_of = module_of, calls = calls, whole = whole, buffers = model:named_buffers(),
                           written = {}, id_inputs = id_inputs}, Graph)
   local ok2, err = pcall(function()
      local batch = ffi.new('const char*[8]')
      for d = 0, 7 do batch[d] = 'batch' end
      local function declare(output, name, shape, elem_type)
         local dims = ffi.new('int64_t[?]', math.max(#shape, 1))
         for d = 1, #shape do dims[d - 1] = (o.dynamic_batch and d == 1) and -1 or shape[d] end
         check(C.fnn_onnx_value(g.model, output, name, elem_type or 1, #shape, dims, batch), name)
      end
      for i, x in ipairs(inputs) do
         if x:dtype() == 'int64' then
            declare(0, in_names[i], x:shape(), 7)   -- ONNX's INT64: 1-based ids, as fastnn's
         elseif x:dtype() ~= 'float32' then
            error(('onnx.export: example input %d is %s; float32 inputs and int64 ids only'):format(i, x:dtype()), 0)
         else
            g.names[key(traced[i].node)] = in_names[i]
            declare(0, in_names[i], x:shape())
         end
      end
      for _, pair in ipairs(params) do
         check(C.fnn_onnx_initializer(g.model, pair[1], pair[2]:tensor()), pair[1])
         g.names[key(pair[2].node)] = pair[1]
      end
      for i, y in ipairs(outputs) do
         if not tensor.is_tensor(y) or y.node == nil then
            error(('onnx.export: output %d of the model is not a tensor computed from its inputs'):format(i), 0)
         end
         local name = g:value(y.node, 'the model')
         -- the graph output under its own name
         check(C.fnn_onnx_node(g.model, 'Identity', out_names[i] .. '_identity', 1, ffi.new('const char*[1]', {name}),
                               1, ffi.new('const char*[1]', {out_names[i]})), out_names[i])
         declare(1, out_names[i], y:shape())
      end
      check(C.fnn_onnx_save(g.model, path), path)
   end)
   if not ok2 then error(err, 2) end
   return path
end

return M
