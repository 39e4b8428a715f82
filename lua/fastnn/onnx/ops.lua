-- fastnn.onnx.ops: fnn.onnx's operator table, one entry per fastnn op (the name its autograd node
-- records, as fnn.ops() lists it). An entry says which ONNX operators the op becomes (`onnx`) and
-- writes them: export(g, n) gets the graph being built and the traced node n
--   n.op, n.inputs[k] (the ONNX name of input k), n.in_shapes[k], n.out_shape (Lua arrays),
--   n.attr(name) (a number the node recorded, fnn_node_attr: softmax's 'dim', leaky_relu's 'k0')
-- and returns the ONNX name of the op's output (`optional` lists the inputs an op may record as
-- absent, such as linear's bias: n.inputs[k] is then nil), through
--   g:node(op_type, inputs, attrs) -> the new node's output name (attrs: {name = integer | {ints} |
--                                      {float = x}})
--   g:constant(value) -> the name of a float32 scalar initializer holding value
-- An op without an entry is refused by name. So adding an operator is one entry here.
-- (The importer, fnn.onnx.load, is not written yet; it is to read the same entries by their `onnx`.)
local M = {}

local function unary(op_type)
   return {onnx = {op_type}, export = function(g, n) return g:node(op_type, {n.inputs[1]}) end}
end

local function binary(op_type)
   return {onnx = {op_type}, export = function(g, n) return g:node(op_type, {n.inputs[1], n.inputs[2]}) end}
end

-- x [.., in] times W [out, in] transposed, plus b [out]: Gemm for a matrix x, else MatMul and Add
M.linear = {onnx = {'Gemm', 'Transpose', 'MatMul', 'Add'}, optional = {[3] = true}, export = function(g, n)
   local x, w, b = n.inputs[1], n.inputs[2], n.inputs[3]
   if #n.in_shapes[1] == 2 then
      return g:node('Gemm', {x, w, b}, {transB = 1})
   end
   local y = g:node('MatMul', {x, g:node('Transpose', {w}, {perm = {1, 0}})})
   if b then y = g:node('Add', {y, b}) end
   return y
end}

M.matmul = binary('MatMul')
M.add = binary('Add')
M.sub = binary('Sub')
M.mul = binary('Mul')
M.div = binary('Div')
M.relu = unary('Relu')
M.tanh = unary('Tanh')
M.sigmoid = unary('Sigmoid')
M.neg = unary('Neg')
M.exp = unary('Exp')

-- softmax along one axis: ONNX's Softmax and LogSoftmax (opset 13 on) take one axis, as fastnn does
M.softmax = {onnx = {'Softmax'}, export = function(g, n) return g:node('Softmax', {n.inputs[1]}, {axis = n.attr('dim')}) end}
M.log_softmax = {onnx = {'LogSoftmax'}, export = function(g, n)
   return g:node('LogSoftmax', {n.inputs[1]}, {axis = n.attr('dim')})
end}

-- the parameter an elementwise node keeps as k0: leaky_relu's slope, elu's alpha
M.leaky_relu = {onnx = {'LeakyRelu'}, export = function(g, n)
   return g:node('LeakyRelu', {n.inputs[1]}, {alpha = {float = n.attr('k0')}})
end}
M.elu = {onnx = {'Elu'}, export = function(g, n) return g:node('Elu', {n.inputs[1]}, {alpha = {float = n.attr('k0')}}) end}

-- exact GELU, 0.5 x (1 + erf(x / sqrt 2)), through Erf (ONNX's Gelu comes at opset 20)
M.gelu = {onnx = {'Div', 'Erf', 'Add', 'Mul'}, export = function(g, n)
   local x = n.inputs[1]
   local e = g:node('Erf', {g:node('Div', {x, g:constant(math.sqrt(2))})})
   return g:node('Mul', {g:node('Mul', {x, g:node('Add', {e, g:constant(1)})}), g:constant(0.5)})
end}

-- x sigmoid(x)
M.silu = {onnx = {'Sigmoid', 'Mul'}, export = function(g, n)
   local x = n.inputs[1]
   return g:node('Mul', {x, g:node('Sigmoid', {x})})
end}

-- flatten and reshape keep the batch: ONNX's Flatten for [N, ...] -> [N, rest], else Reshape with
-- the batch left free (0 copies the input's size)
local function reshape(g, n)
   local out = n.out_shape
   if #out == 2 and #n.in_shapes[1] >= 2 then return g:node('Flatten', {n.inputs[1]}, {axis = 1}) end
   local shape = {0}
   for d = 2, #out do shape[d] = out[d] end
   return g:node('Reshape', {n.inputs[1], g:ints_constant(shape)})
end
M.reshape = {onnx = {'Flatten', 'Reshape'}, export = reshape}
M.view = M.reshape

return M
