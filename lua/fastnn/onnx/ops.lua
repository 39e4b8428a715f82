-- fastnn.onnx.ops: fnn.onnx's operator table, one entry per fastnn op (the name its autograd node
-- records, as fnn.ops() lists it). An entry says which ONNX operators the op becomes (`onnx`) and
-- writes them: export(g, n) gets the graph being built and the traced node n
--   n.op, n.inputs[k] (the ONNX name of input k), n.in_shapes[k], n.out_shape (Lua arrays),
--   n.attr(name) (a number the node recorded, fnn_node_attr: softmax's 'dim', leaky_relu's 'k0')
-- and returns the ONNX name of the op's output (`optional` lists the inputs an op may record as
-- absent, such as linear's bias: n.inputs[k] is then nil), through
--   g:node(op_type, inputs, attrs) -> the new node's output name (attrs: {name = integer | {ints} |
--                                      {float = x} | {string = s}}); an input named '' is absent
--   g:constant(value) -> the name of a float32 scalar initializer holding value
--   g:node(op_type, inputs, attrs, k) with k outputs returns their k names
-- A module whose forward is one ONNX operator with glue (nn.LSTM, nn.GRU) is written whole:
-- `module_class` names its class (fastnn.nn's) and export_call(g, call) writes one call of it
-- (call.module, call.args: forward's arguments after self, call.returns: its results) and names
-- the ONNX values of the tensors it returned through g:name_of(t, name).
-- An op without an entry is refused by name. So adding an operator is one entry here.
-- The importer, fnn.onnx.load (load.lua), reads the same entries: `import` maps each ONNX op_type the
-- entry reads to a function run(node, args) -> the node's outputs, where args[k] is input k's
-- tensor (nil for an absent optional input) and node.attr(name, default) an attribute (a number, a
-- list, a string or a tensor). An ONNX operator no entry imports is refused by name at load, and
-- `check` {op_type -> fn(node)} refuses a node's attributes at load (an error names the attribute).
local M = {}

local function fnn() return require 'fastnn' end
-- a module's field that holds a tensor
local function tensor_field(m, name) return require('fastnn.tensor').is_tensor(rawget(m, name)) end

-- an ONNX axis (0-based, negative from the end) as a fastnn dim (1-based, negative from the end)
local function dim_of(axis) return axis >= 0 and axis + 1 or axis end

local function unary(op_type, name)
   return {onnx = {op_type}, export = function(g, n) return g:node(op_type, {n.inputs[1]}) end,
           import = {[op_type] = function(_, x) return fnn()[name](x[1]) end}}
end

local function binary(op_type, f)
   return {onnx = {op_type}, export = function(g, n) return g:node(op_type, {n.inputs[1], n.inputs[2]}) end,
           import = {[op_type] = function(_, x) return f(x[1], x[2]) end}}
end

-- Gemm: Y = alpha op(A) op(B) + beta C; linear's own form (B transposed, C a bias) takes fnn.linear
local function gemm(node, x)
   local a, b, c = x[1], x[2], x[3]
   local alpha, beta = node.attr('alpha', 1), node.attr('beta', 1)
   if node.attr('transA', 0) ~= 0 then a = a:t() end
   if node.attr('transB', 0) ~= 0 and alpha == 1 and beta == 1 and a:dim() == 2 and (c == nil or c:dim() == 1) then
      return fnn().linear(a, b, c)
   end
   if node.attr('transB', 0) ~= 0 then b = b:t() end
   local y = a:matmul(b)
   if alpha ~= 1 then y = y * alpha end
   if c ~= nil then y = y + (beta ~= 1 and c * beta or c) end
   return y
end

-- x [.., in] times W [out, in] transposed, plus b [out]: Gemm for a matrix x, else MatMul and Add;
-- then its activation option (n.attr 'activation': 1 relu, 2 gelu) as Relu or gelu's nodes
M.linear = {onnx = {'Gemm', 'Transpose', 'MatMul', 'Add', 'Relu', 'Div', 'Erf', 'Mul'}, optional = {[3] = true},
            import = {Gemm = gemm}, export = function(g, n)
   local x, w, b = n.inputs[1], n.inputs[2], n.inputs[3]
   local y
   if #n.in_shapes[1] == 2 then
      y = g:node('Gemm', {x, w, b}, {transB = 1})
   else
      y = g:node('MatMul', {x, g:node('Transpose', {w}, {perm = {1, 0}})})
      if b then y = g:node('Add', {y, b}) end
   end
   local act = n.attr('activation')
   if act == 1 then y = g:node('Relu', {y}) end
   if act == 2 then y = M.gelu.export(g, {inputs = {y}}) end
   return y
end}

M.matmul = binary('MatMul', function(a, b) return a:matmul(b) end)
M.add = binary('Add', function(a, b) return a + b end)
M.sub = binary('Sub', function(a, b) return a - b end)
M.mul = binary('Mul', function(a, b) return a * b end)
M.div = binary('Div', function(a, b) return a / b end)
M.relu = unary('Relu', 'relu')
M.tanh = unary('Tanh', 'tanh')
M.sigmoid = unary('Sigmoid', 'sigmoid')
M.neg = unary('Neg', 'neg')
M.exp = unary('Exp', 'exp')
M.log = unary('Log', 'log')
M.sqrt = unary('Sqrt', 'sqrt')
M.abs = unary('Abs', 'abs')
M.erf = unary('Erf', 'erf')

-- softmax along one axis: ONNX's Softmax and LogSoftmax (opset 13 on) take one axis, as fastnn does
M.softmax = {onnx = {'Softmax'}, export = function(g, n) return g:node('Softmax', {n.inputs[1]}, {axis = n.attr('dim')}) end,
             import = {Softmax = function(node, x) return x[1]:softmax(dim_of(node.attr('axis', -1))) end}}
M.log_softmax = {onnx = {'LogSoftmax'}, export = function(g, n)
   return g:node('LogSoftmax', {n.inputs[1]}, {axis = n.attr('dim')})
end, import = {LogSoftmax = function(node, x) return x[1]:log_softmax(dim_of(node.attr('axis', -1))) end}}

-- the parameter an elementwise node keeps as k0: leaky_relu's slope, elu's alpha
M.leaky_relu = {onnx = {'LeakyRelu'}, export = function(g, n)
   return g:node('LeakyRelu', {n.inputs[1]}, {alpha = {float = n.attr('k0')}})
end, import = {LeakyRelu = function(node, x) return x[1]:leaky_relu(node.attr('alpha', 0.01)) end}}
M.elu = {onnx = {'Elu'}, export = function(g, n) return g:node('Elu', {n.inputs[1]}, {alpha = {float = n.attr('k0')}}) end,
         import = {Elu = function(node, x) return x[1]:elu(node.attr('alpha', 1)) end}}

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
-- a reshape: Flatten when it keeps the first dim and joins the rest; else Reshape to the traced shape,
-- its first dim written as 0 (the input's: a dynamic batch stays dynamic) when it keeps the input's,
-- else as -1 (inferred: a batch merged into it, as [B, T, C] -> [B T, C], follows the batch)
local function reshape(g, n)
   local out, inp = n.out_shape, n.in_shapes[1]
   local rest = 1
   for d = 2, #inp do rest = rest * inp[d] end
   if #out == 2 and #inp >= 2 and out[1] == inp[1] and out[2] == rest then
      return g:node('Flatten', {n.inputs[1]}, {axis = 1})
   end
   local shape = {out[1] == inp[1] and 0 or -1}
   for d = 2, #out do shape[d] = out[d] end
   return g:node('Reshape', {n.inputs[1], g:ints_constant(shape)})
end
-- Reshape's target: 0 copies the input's size there (unless allowzero), -1 is inferred (fastnn's -1 too)
local function reshape_in(node, x)
   local data, target = x[1], x[2]:to_table()
   local shape = data:shape()
   for d, v in ipairs(target) do
      if v == 0 and node.attr('allowzero', 0) == 0 then target[d] = shape[d] end
   end
   return data:reshape(unpack(target))
end
-- Flatten(axis): [d1 .. d_axis] x [the rest]
local function flatten_in(node, x)
   local shape, axis = x[1]:shape(), node.attr('axis', 1)
   if axis < 0 then axis = axis + #shape end
   local lead, rest = 1, 1
   for d = 1, #shape do if d <= axis then lead = lead * shape[d] else rest = rest * shape[d] end end
   return x[1]:reshape(lead, rest)
end
M.reshape = {onnx = {'Flatten', 'Reshape'}, export = reshape, import = {Flatten = flatten_in, Reshape = reshape_in}}
M.view = M.reshape

-- permute and transpose as Transpose (perm 0-based; ONNX's default reverses the dims); the dims are
-- the node's (fnn_node_attr: permute's dim0.., transpose's dim1 and dim2, 0-based)
local function transpose_export(g, n)
   local nd, perm = #n.in_shapes[1], {}
   if n.op == 'transpose' then
      for d = 1, nd do perm[d] = d - 1 end
      local a, b = n.attr('dim1'), n.attr('dim2')
      perm[a + 1], perm[b + 1] = b, a
   else
      for d = 1, nd do perm[d] = n.attr('dim' .. (d - 1)) end
   end
   return g:node('Transpose', {n.inputs[1]}, {perm = perm})
end
M.transpose = {onnx = {'Transpose'}, export = transpose_export}
M.permute = {onnx = {'Transpose'}, export = transpose_export, import = {Transpose = function(node, x)
   local nd = x[1]:dim()
   local perm = node.attr('perm')
   local dims = {}
   for d = 1, nd do dims[d] = perm and perm[d] + 1 or nd + 1 - d end
   return x[1]:permute(unpack(dims))
end}}

-- ---- convolutional nets (batch norm, layer norm and concat are read only so far) ----

-- ONNX's pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...] as fastnn's {{before, after}, ...}
local function pads_of(node, nd)
   local pads = node.attr('pads')
   local out = {}
   for d = 1, nd do out[d] = pads and {pads[d], pads[nd + d]} or {0, 0} end
   return out
end
local function no_auto_pad(node)
   local auto = node.attr('auto_pad', 'NOTSET')
   if auto ~= 'NOTSET' and auto ~= 'VALID' then
      error(('auto_pad %s is not read (NOTSET or VALID; explicit pads)'):format(auto), 0)
   end
end
-- one value per spatial dim (an absent attribute: the default)
local function per_dim(node, name, nd, default)
   local v = node.attr(name)
   local out = {}
   for d = 1, nd do out[d] = v and v[d] or default end
   return out
end

-- a convolution node's geometry for Conv and ConvTranspose (op_type; transposed: the sizes map the
-- other way): its inputs, kernel, strides, dilations, the padding before each dim (the node keeps it)
-- and rest[d] = (a - 1) s + dl (k - 1) + 1 - b - before, a and b the sizes the op maps from and to:
-- Conv's padding after (the least that gives the output size: what lies past the last window changes
-- nothing), ConvTranspose's crop after (or, negative, its output_padding)
local function conv_geometry(n, op_type, transposed)
   local nd, xs, ws, ys = n.attr('nd'), n.in_shapes[1], n.in_shapes[2], n.out_shape
   if #xs ~= nd + 2 then
      error(('onnx.export: %s of an unbatched input %s (ONNX\'s %s takes [N, C, ...])'):format(n.op,
            table.concat(xs, 'x'), op_type), 0)
   end
   local from, to = transposed and xs or ys, transposed and ys or xs
   local geo = {nd = nd, kernel = {}, strides = {}, dils = {}, before = {}, rest = {}, inputs = {n.inputs[1], n.inputs[2]}}
   if n.inputs[3] then geo.inputs[3] = n.inputs[3] end
   for d = 1, nd do
      local k, s, dl, pb = ws[2 + d], n.attr('stride' .. (d - 1)), n.attr('dilation' .. (d - 1)), n.attr('pad' .. (d - 1))
      geo.kernel[d], geo.strides[d], geo.dils[d], geo.before[d] = k, s, dl, pb
      geo.rest[d] = (from[2 + d] - 1) * s + dl * (k - 1) + 1 - to[2 + d] - pb
   end
   return geo
end

-- Conv, then its activation option (n.attr 'activation': 1 relu) as Relu
local function conv_export(g, n)
   local geo, pads = conv_geometry(n, 'Conv', false), {}
   for d = 1, geo.nd do pads[d], pads[geo.nd + d] = geo.before[d], math.max(0, geo.rest[d]) end
   local y = g:node('Conv', geo.inputs, {kernel_shape = geo.kernel, strides = geo.strides, pads = pads,
                                         dilations = geo.dils, group = n.attr('groups')})
   if n.attr('activation') == 1 then y = g:node('Relu', {y}) end
   return y
end

M.conv2d = {onnx = {'Conv', 'Relu'}, optional = {[3] = true}, export = conv_export, import = {Conv = function(node, x)
   no_auto_pad(node)
   local nd = x[2]:dim() - 2
   if nd < 1 or nd > 3 then error(('Conv with %d spatial dims (1 to 3 are read)'):format(nd), 0) end
   return fnn()['conv' .. nd .. 'd'](x[1], x[2], x[3], {stride = per_dim(node, 'strides', nd, 1),
      dilation = per_dim(node, 'dilations', nd, 1), padding = pads_of(node, nd), groups = node.attr('group', 1)})
end}}

-- pooling: fastnn pads both sides alike
local function pool(kind)
   return function(node, x)
      no_auto_pad(node)
      local nd = x[1]:dim() - 2
      local k = node.attr('kernel_shape')
      local pads, sym = pads_of(node, nd), {}
      for d = 1, nd do
         if pads[d][1] ~= pads[d][2] then error('pads that differ before and after a dim are not read', 0) end
         sym[d] = pads[d][1]
      end
      for _, dl in ipairs(per_dim(node, 'dilations', nd, 1)) do
         if dl ~= 1 then error('a dilated pooling window is not read', 0) end
      end
      local opts = {stride = per_dim(node, 'strides', nd, 1), padding = sym, ceil_mode = node.attr('ceil_mode', 0) ~= 0}
      if kind == 'avg' then opts.count_include_pad = node.attr('count_include_pad', 0) ~= 0 end
      return fnn()[kind .. '_pool' .. nd .. 'd'](x[1], k, opts)
   end
end
M.conv1d, M.conv3d = M.conv2d, M.conv2d

-- a transposed convolution as ConvTranspose (PyTorch's and ONNX's weight layout [in, out/groups, k...]):
-- what is cropped after each dim, or added (output_padding), gives the node's output size from the
-- full transposed output (in - 1) s + d (k - 1) + 1 (conv_geometry)
local function conv_transpose_export(g, n)
   local geo, pads, extra = conv_geometry(n, 'ConvTranspose', true), {}, {}
   for d = 1, geo.nd do
      pads[d], pads[geo.nd + d], extra[d] = geo.before[d], math.max(0, geo.rest[d]), math.max(0, -geo.rest[d])
   end
   return g:node('ConvTranspose', geo.inputs, {kernel_shape = geo.kernel, strides = geo.strides, pads = pads,
                                               dilations = geo.dils, group = n.attr('groups'), output_padding = extra})
end

M.conv_transpose2d = {onnx = {'ConvTranspose'}, optional = {[3] = true}, export = conv_transpose_export,
                      import = {ConvTranspose = function(node, x)
   no_auto_pad(node)
   if node.attr('output_shape') ~= nil then
      error('ConvTranspose with output_shape is not read (its pads and output_padding are)', 0)
   end
   local nd = x[2]:dim() - 2
   if nd < 1 or nd > 3 then error(('ConvTranspose with %d spatial dims (1 to 3 are read)'):format(nd), 0) end
   return fnn()['conv_transpose' .. nd .. 'd'](x[1], x[2], x[3], {stride = per_dim(node, 'strides', nd, 1),
      dilation = per_dim(node, 'dilations', nd, 1), padding = pads_of(node, nd),
      output_padding = per_dim(node, 'output_padding', nd, 0), groups = node.attr('group', 1)})
end}}
M.conv_transpose1d, M.conv_transpose3d = M.conv_transpose2d, M.conv_transpose2d

-- a pooling node as MaxPool / AveragePool: ceil_mode where the node's output is past floor's size
local function pool_export(op_type)
   return function(g, n)
      local nd, xs, ys = n.attr('dims'), n.in_shapes[1], n.out_shape
      if #xs ~= nd + 2 then
         error(('onnx.export: %s of an unbatched input %s (ONNX\'s %s takes [N, C, ...])'):format(n.op,
               table.concat(xs, 'x'), op_type), 0)
      end
      local kernel, strides, pads, ceil = {}, {}, {}, 0
      for d = 1, nd do
         local k, s, p = n.attr('kernel' .. (d - 1)), n.attr('stride' .. (d - 1)), n.attr('padding' .. (d - 1))
         kernel[d], strides[d], pads[d], pads[nd + d] = k, s, p, p
         if ys[2 + d] > math.floor((xs[2 + d] + 2 * p - k) / s) + 1 then ceil = 1 end
      end
      local attrs = {kernel_shape = kernel, strides = strides, pads = pads, ceil_mode = ceil}
      if op_type == 'AveragePool' then attrs.count_include_pad = n.attr('count_include_pad') end
      return g:node(op_type, {n.inputs[1]}, attrs)
   end
end
M.max_pool2d = {onnx = {'MaxPool'}, export = pool_export('MaxPool'), import = {MaxPool = pool('max')}}
M.max_pool1d, M.max_pool3d = M.max_pool2d, M.max_pool2d
M.avg_pool2d = {onnx = {'AveragePool', 'GlobalAveragePool'}, export = pool_export('AveragePool'),
                import = {AveragePool = pool('avg'),
   GlobalAveragePool = function(_, x)
      local y = x[1]
      for d = 3, y:dim() do y = y:mean(d, true) end
      return y
   end}}
M.avg_pool1d, M.avg_pool3d = M.avg_pool2d, M.avg_pool2d

-- upsampling as Resize, with the scales the node's shapes give: nearest reads floor(o * in / out)
-- (ONNX's asymmetric, floor), bilinear PyTorch's half-pixel centres or aligned corners
local function resize_export(mode)
   return function(g, n)
      local xs, ys = n.in_shapes[1], n.out_shape
      if #xs < 3 then
         error(('onnx.export: %s of an unbatched input %s (ONNX\'s Resize here takes [N, C, ...])'):format(n.op,
               table.concat(xs, 'x')), 0)
      end
      local scales = {}
      for d = 1, #xs do scales[d] = ys[d] / xs[d] end
      local attrs = {mode = {string = mode}}
      if mode == 'nearest' then
         attrs.coordinate_transformation_mode = {string = 'asymmetric'}
         attrs.nearest_mode = {string = 'floor'}
      else
         attrs.coordinate_transformation_mode = {string = n.attr('align_corners') ~= 0 and 'align_corners'
                                                 or 'pytorch_half_pixel'}
      end
      return g:node('Resize', {n.inputs[1], '', g:initializer('scales', fnn().tensor(scales))}, attrs)
   end
end
-- Resize as fastnn's upsample: the output size from sizes or scales (floor(in * scale))
local function resize_import(node, x)
   local shape, out = x[1]:shape(), {}
   local sizes = x[4] and x[4]:numel() > 0 and x[4]:to_table()
   local scales = x[3] and x[3]:numel() > 0 and x[3]:to_table()
   if not (sizes or scales) then error('neither scales nor sizes given', 0) end
   for d = 1, #shape do out[d] = sizes and sizes[d] or math.floor(shape[d] * scales[d] + 1e-6) end
   if out[1] ~= shape[1] or out[2] ~= shape[2] then error('a resize of the batch or channel dim is not read', 0) end
   local spatial = {}
   for d = 3, #shape do spatial[d - 2] = out[d] end
   local mode, coord = node.attr('mode', 'nearest'), node.attr('coordinate_transformation_mode', 'half_pixel')
   if mode == 'nearest' and coord == 'asymmetric' and node.attr('nearest_mode', 'round_prefer_floor') == 'floor' then
      return fnn().upsample(x[1], {size = spatial, mode = 'nearest'})
   end
   if mode == 'linear' and #spatial == 2 and (coord == 'half_pixel' or coord == 'pytorch_half_pixel' or coord == 'align_corners') then
      return fnn().upsample(x[1], {size = spatial, mode = 'bilinear', align_corners = coord == 'align_corners'})
   end
   error(("mode '%s' with coordinate_transformation_mode '%s' is not read (nearest: asymmetric and floor; "
          .. "linear over 2 dims: half_pixel, pytorch_half_pixel or align_corners)"):format(mode, coord), 0)
end
M.upsample_nearest = {onnx = {'Resize'}, export = resize_export('nearest'), import = {Resize = resize_import}}
M.upsample_bilinear2d = {onnx = {'Resize'}, export = resize_export('linear')}

-- inference batch norm: X, scale, B, input_mean, input_var (running statistics: the loader keeps them
-- as buffers)
-- an eval-mode batch norm: its running statistics are the buffers of the module whose output it is
-- (they are no inputs of the node), written under their dotted names
local function batch_norm_export(g, n)
   local m = n.module
   if n.attr('training') ~= 0 or not m or not tensor_field(m, 'running_mean') then
      error("onnx.export: batch_norm with batch statistics (training mode, or track_running_stats = false); "
            .. 'export a model in eval mode with running statistics', 0)
   end
   local C_ = n.in_shapes[1][2]
   local T = fnn()
   local scale = n.inputs[2] or g:initializer('bn_scale', T.ones(C_))
   local bias = n.inputs[3] or g:initializer('bn_bias', T.zeros(C_))
   local y = g:node('BatchNormalization', {n.inputs[1], scale, bias, g:buffer(m.running_mean), g:buffer(m.running_var)},
                    {epsilon = {float = n.attr('eps')}})
   -- a relu fused into the node ({activation = 'relu'}) is ONNX's own Relu after it
   if n.attr('activation') == require('fastnn.C').FNN_NORM_ACT_RELU then return g:node('Relu', {y}) end
   return y
end

M.batch_norm = {onnx = {'BatchNormalization', 'Relu'}, buffers = {BatchNormalization = {4, 5}}, optional = {[2] = true, [3] = true},
                export = batch_norm_export,
                import = {BatchNormalization = function(node, x)
   if node.attr('training_mode', 0) ~= 0 then error('training_mode 1 is not read (an inference graph)', 0) end
   return fnn().batch_norm(x[1], x[4], x[5], x[2], x[3], {eps = node.attr('epsilon', 1e-5)})
end}}

-- layer_norm as LayerNormalization over the trailing dims that hold its `normalized` elements (a
-- missing weight or bias written as ones / zeros: ONNX's Scale is required)
local function layer_norm_export(g, n)
   local shape, count, axis = n.in_shapes[1], n.attr('normalized'), 0
   local trail, prod = {}, 1
   for d = #shape, 1, -1 do
      if prod >= count then break end
      prod = prod * shape[d]
      table.insert(trail, 1, shape[d])
      axis = axis - 1
   end
   if prod ~= count then
      error(('onnx.export: layer_norm of %s over %d elements is not over whole trailing dims'):format(
            table.concat(shape, 'x'), count), 0)
   end
   local T = fnn()
   local scale = n.inputs[2] or g:initializer('ln_scale', T.ones(unpack(trail)))
   local bias = n.inputs[3] or g:initializer('ln_bias', T.zeros(unpack(trail)))
   return g:node('LayerNormalization', {n.inputs[1], scale, bias}, {axis = axis, epsilon = {float = n.attr('eps')}})
end

M.layer_norm = {onnx = {'LayerNormalization'}, optional = {[2] = true, [3] = true}, export = layer_norm_export,
                import = {LayerNormalization = function(node, x)
   local axis, shape = node.attr('axis', -1), x[1]:shape()
   if axis < 0 then axis = axis + #shape end
   local n = 1
   for d = axis + 1, #shape do n = n * shape[d] end
   if x[2]:numel() ~= n then
      error(('axis %d normalizes %d values, the scale has %d'):format(node.attr('axis', -1), n, x[2]:numel()), 0)
   end
   return fnn().layer_norm(x[1], x[2], x[3], {eps = node.attr('epsilon', 1e-5)})
end}}

-- cat as Concat along its dim; stack as Concat of its inputs each unsqueezed at the new dim (the
-- node's dim, 0-based: fnn_node_attr)
M.cat = {onnx = {'Concat'}, export = function(g, n) return g:node('Concat', n.inputs, {axis = n.attr('dim')}) end,
         import = {Concat = function(node, x) return fnn().cat(x, dim_of(node.attr('axis'))) end}}
M.stack = {onnx = {'Unsqueeze', 'Concat'}, export = function(g, n)
   local axes, parts = g:ints_constant({n.attr('dim')}), {}
   for k, name in ipairs(n.inputs) do parts[k] = g:node('Unsqueeze', {name, axes}) end
   return g:node('Concat', parts, {axis = n.attr('dim')})
end}

-- Squeeze and Unsqueeze (opset 13 on: the axes as an input), Expand (numpy's broadcast to a shape)
local function axes_of(t, nd)
   local axes = t and t:to_table() or {}
   if type(axes) == 'number' then axes = {axes} end
   for k, a in ipairs(axes) do if a < 0 then axes[k] = a + nd end end
   table.sort(axes)
   return axes
end
M.squeeze = {onnx = {'Squeeze'}, import = {Squeeze = function(_, x)
   local y = x[1]
   if not x[2] then return y:squeeze() end
   local axes = axes_of(x[2], y:dim())
   for k = #axes, 1, -1 do y = y:squeeze(axes[k] + 1) end
   return y
end}}
M.unsqueeze = {onnx = {'Unsqueeze'}, import = {Unsqueeze = function(_, x)
   local y = x[1]
   for _, a in ipairs(axes_of(x[2], y:dim() + (x[2]:numel()))) do
      if y:dtype() ~= 'float32' and y:dim() == 0 then y = fnn().long({y:to_table()})   -- a shape's scalar
      else y = y:unsqueeze(a + 1) end
   end
   return y
end}}
M.expand = {onnx = {'Expand'}, import = {Expand = function(_, x)
   local shape, target = x[1]:shape(), x[2]:to_table()
   local nd = math.max(#shape, #target)
   local out = {}
   for d = 1, nd do
      local a, b = shape[d - nd + #shape] or 1, target[d - nd + #target] or 1
      out[d] = a == 1 and b or a
   end
   return x[1]:expand(unpack(out))
end}}

-- Gather along axis 0 of a matrix is an embedding lookup (ids of any shape); along another axis with
-- 1-d indices, index_select
-- ids that are positions 1..T along their last dim (fnn.arange(1, T):long(), maybe expanded)
local function positions(ids)
   local v, shape = ids:to_flat(), ids:shape()
   local T = shape[#shape] or 1
   for i = 1, #v do if v[i] ~= (i - 1) % T + 1 then return false end end
   return true
end

-- nn.Embedding written whole: Gather of the weight's rows at ids - 1 (ONNX's are 0-based). The ids are
-- an int64 input of the model, or positions 1..T made inside its forward, written as a constant of the
-- traced length. Other ids made inside forward are refused: an int64 tensor carries no node, so the
-- trace cannot tell a constant from ids computed from the inputs (argmax of one)
local function embedding_export_call(g, call)
   local ids = call.args[1]
   local tensor = require('fastnn.tensor')
   if not (tensor.is_tensor(ids) and ids:dtype() == 'int64') then
      error(('onnx.export: %s is written for int64 ids; give the model int64 ids (a float tensor of ids is not read)'):format(
            call.module:short_str()), 0)
   end
   local name = g.id_inputs[ids]
   if not name then
      if not positions(ids) then
         error(('onnx.export: %s reads ids that are no input of the model; an int64 input, or positions 1..T made '
                .. 'inside forward, are written'):format(call.module:short_str()), 0)
      end
      name = g:initializer('positions', ids)
   end
   local rows = g:node('Sub', {name, g:ints_constant({1})})
   g:name_of(call.returns[1], g:node('Gather', {g:value(call.module.weight.node, 'embedding'), rows}, {axis = 0}))
end

M.embedding = {onnx = {'Gather', 'Sub'}, module_class = 'Embedding', export_call = embedding_export_call,
               import = {Gather = function(node, x)
   local data, idx, axis = x[1], x[2], node.attr('axis', 0)
   if axis < 0 then axis = axis + data:dim() end
   if axis == 0 and data:dim() == 2 and data:dtype() == 'float32' then return fnn().embedding(idx + 1, data) end   -- fastnn's ids are 1-based
   if idx:dim() == 0 then   -- one index: that slice (an entry of a shape, q of a packed q/k/v)
      local i = idx:to_table()
      return data:select(axis + 1, (i < 0 and i + data:shape()[axis + 1] or i) + 1)
   end
   if idx:dim() == 1 then return data:index_select(axis + 1, idx + 1) end
   error(('Gather of %s along axis %d with indices %s is not read'):format(table.concat(data:shape(), 'x'), axis,
         table.concat(idx:shape(), 'x')), 0)
end}}

-- narrow as Slice of its dim (fnn_node_attr: dim and start, 0-based; the length is the output's);
-- select as Gather of one index (its dim gone). Read: Slice with steps of 1 and -1 as narrow (ONNX's
-- starts and ends clamped to the dim, negative from the end)
local function narrow_export(g, n)
   local dim, start = n.attr('dim'), n.attr('start')
   if n.op == 'select' then
      return g:node('Gather', {n.inputs[1], g:initializer('index', fnn().long({start}):reshape())}, {axis = dim})
   end
   local stop = start + n.out_shape[dim + 1]
   return g:node('Slice', {n.inputs[1], g:ints_constant({start}), g:ints_constant({stop}), g:ints_constant({dim})})
end
M.select = {onnx = {'Gather'}, export = narrow_export}
-- contiguous changes no value: Identity
M.contiguous = {onnx = {'Identity'}, export = function(g, n) return g:node('Identity', {n.inputs[1]}) end}
M.narrow = {onnx = {'Slice'}, export = narrow_export, import = {Slice = function(_, x)
   local data, starts, ends = x[1], x[2]:to_table(), x[3]:to_table()
   local shape = data:shape()
   local axes = x[4] and x[4]:to_table()
   local steps = x[5] and x[5]:to_table()
   local y = data
   for k = 1, #starts do
      local axis = axes and axes[k] or k - 1
      if axis < 0 then axis = axis + #shape end
      local step = steps and steps[k] or 1
      if step ~= 1 and step ~= -1 then error(('a step of %d is not read (steps of 1 and -1)'):format(step), 0) end
      local n = shape[axis + 1]
      local function clamp(v, lo_bound)   -- -1 step: from starts down to ends (exclusive), -1 the bound
         if v < 0 then v = v + n end
         return math.max(lo_bound, math.min(n + lo_bound, v))
      end
      if step == 1 then
         local lo, hi = clamp(starts[k], 0), clamp(ends[k], 0)
         y = y:narrow(axis + 1, lo + 1, math.max(0, hi - lo))
      else
         local first, stop = clamp(starts[k], -1), clamp(ends[k], -1)
         y = require('fastnn').nn.Reverse.flip(y:narrow(axis + 1, stop + 2, math.max(0, first - stop)), axis + 1)
      end
   end
   return y
end}}

-- ---- recurrent nets: nn.LSTM and nn.GRU as ONNX's LSTM and GRU, both ways ----
-- ONNX's gate orders are LSTM i, o, f, c and GRU z, r, h; fastnn's (PyTorch's) i, f, g, o and r, z, n.
-- TO_ONNX[op][q]: the fastnn gate that is ONNX's gate q; FROM_ONNX[op][j]: the ONNX gate that is fastnn's j
local TO_ONNX = {LSTM = {1, 4, 2, 3}, GRU = {2, 1, 3}}
local FROM_ONNX = {LSTM = {1, 3, 4, 2}, GRU = {2, 1, 3}}

-- an nn.LSTM / nn.GRU call: per layer one ONNX node (time-major: x [N, T, I] transposed to [T, N, I]),
-- its W, R, B the module's parameters in ONNX's gate order (Gather of their rows, so the file keeps
-- the parameters under their names), the next layer's input Y [T, D, N, H] squeezed (one direction) or
-- its directions side by side (Transpose, Reshape [T, N, 2H]); go_backwards reads x reversed (Slice
-- with step -1: fastnn returns that layer's outputs in processing order)
local function rnn_export_call(op_type)
   local lstm = op_type == 'LSTM'
   return function(g, call)
      local m, x, state = call.module, call.args[1], call.args[2]
      local H, L, D = m.hidden_size, m.num_layers, m.bidirectional and 2 or 1
      local idx = {}
      for _, gate in ipairs(TO_ONNX[op_type]) do
         for r = 0, H - 1 do idx[#idx + 1] = (gate - 1) * H + r end
      end
      local rows, zero = g:ints_constant(idx), g:ints_constant({0})
      local function gathered(name) return g:node('Gather', {g:value(m[name].node, op_type), rows}, {axis = 0}) end
      local function stacked(list)
         local us = {}
         for i, v in ipairs(list) do us[i] = g:node('Unsqueeze', {v, zero}) end
         return #us == 1 and us[1] or g:node('Concat', us, {axis = 0})
      end
      local function input_of(t, what)
         if not (require('fastnn.tensor').is_tensor(t) and t.node ~= nil) then
            error(('onnx.export: the %s of %s is plain data (a constant the trace cannot name); make it an '
                   .. 'input'):format(what, m:short_str()), 0)
         end
         return g:value(t.node, op_type)
      end
      local seq = input_of(x, 'input')
      if m.go_backwards then
         seq = g:node('Slice', {seq, g:ints_constant({-1}), g:ints_constant({-2 ^ 63}), g:ints_constant({1}),
                                g:ints_constant({-1})})
      end
      seq = g:node('Transpose', {seq}, {perm = {1, 0, 2}})
      local h0, c0
      if state ~= nil then
         if lstm then h0, c0 = input_of(state[1], 'initial h'), input_of(state[2], 'initial c')
         else h0 = input_of(state, 'initial h') end
      end
      -- layer k's rows of a state [L * D, N, H]
      local function rows_of(s, k)
         if s == nil or L == 1 then return s end
         return g:node('Slice', {s, g:ints_constant({k * D}), g:ints_constant({(k + 1) * D}), zero})
      end
      local hs, cs = {}, {}
      for k = 0, L - 1 do
         local W, R, B = {}, {}, {}
         for d, sfx in ipairs(D == 2 and {'', '_reverse'} or {''}) do
            W[d], R[d] = gathered('weight_ih_l' .. k .. sfx), gathered('weight_hh_l' .. k .. sfx)
            if m['bias_ih_l' .. k .. sfx] then
               B[d] = g:node('Concat', {gathered('bias_ih_l' .. k .. sfx), gathered('bias_hh_l' .. k .. sfx)}, {axis = 0})
            end
         end
         local ins = {seq, stacked(W), stacked(R), #B > 0 and stacked(B) or ''}
         if h0 then ins[5], ins[6] = '', rows_of(h0, k) end
         if c0 then ins[7] = rows_of(c0, k) end
         local attrs = {hidden_size = H, direction = {string = D == 2 and 'bidirectional' or 'forward'}}
         if not lstm then attrs.linear_before_reset = 1 end
         local y, yh, yc = g:node(op_type, ins, attrs, lstm and 3 or 2)
         hs[#hs + 1], cs[#cs + 1] = yh, yc
         if D == 1 then seq = g:node('Squeeze', {y, g:ints_constant({1})})
         else seq = g:node('Reshape', {g:node('Transpose', {y}, {perm = {0, 2, 1, 3}}), g:ints_constant({0, 0, -1})}) end
      end
      local out
      if m.return_sequences then
         out = g:node('Transpose', {seq}, {perm = {1, 0, 2}})
      elseif D == 1 then
         out = g:node('Squeeze', {hs[#hs], zero})
      else   -- the last layer's two final states side by side [N, 2H]
         out = g:node('Reshape', {g:node('Transpose', {hs[#hs]}, {perm = {1, 0, 2}}), g:ints_constant({0, -1})})
      end
      local r = call.returns
      g:name_of(r[1], out)
      local h_n = #hs == 1 and hs[1] or g:node('Concat', hs, {axis = 0})
      if lstm then
         g:name_of(r[2][1], h_n)
         g:name_of(r[2][2], #cs == 1 and cs[1] or g:node('Concat', cs, {axis = 0}))
      else
         g:name_of(r[2], h_n)
      end
   end
end

-- what fastnn's kernels cannot run, refused at load by attribute (or input) name
local function rnn_check(op_type)
   return function(node)
      for _, name in ipairs{'activations', 'activation_alpha', 'activation_beta', 'clip'} do
         if node.attrs[name] ~= nil then
            error(("attribute %s is not read (fastnn's cells: sigmoid and tanh, no clipping)"):format(name), 0)
         end
      end
      if node.attr('input_forget', 0) ~= 0 then
         error("attribute input_forget = 1 (coupled input and forget gates) is not fastnn's LSTM", 0)
      end
      if op_type == 'GRU' and node.attr('linear_before_reset', 0) ~= 1 then
         error("attribute linear_before_reset = 0 (the reset before the hidden projection) is not fastnn's GRU "
               .. "(PyTorch's, linear_before_reset = 1)", 0)
      end
      local layout, direction = node.attr('layout', 0), node.attr('direction', 'forward')
      if layout ~= 0 and layout ~= 1 then error(('attribute layout = %s is not ONNX\'s 0 or 1'):format(layout), 0) end
      if direction ~= 'forward' and direction ~= 'reverse' and direction ~= 'bidirectional' then
         error(("attribute direction = '%s' is not forward, reverse or bidirectional"):format(direction), 0)
      end
      if op_type == 'LSTM' and (node.inputs[8] or '') ~= '' then
         error('input P (peephole weights) is not read (fastnn\'s LSTM has none)', 0)
      end
   end
end

-- ONNX's LSTM / GRU on fastnn's fused kernels (fnn.lstm, fnn.gru: one node per direction)
local function rnn_import(op_type)
   local lstm, order = op_type == 'LSTM', FROM_ONNX[op_type]
   return function(node, x)
      local X, W, R, B, lens, h0, c0 = x[1], x[2], x[3], x[4], x[5], x[6], x[7]
      local layout, direction = node.attr('layout', 0), node.attr('direction', 'forward')
      if layout == 0 then X = X:permute(2, 1, 3) end   -- [N, T, I]
      local T = X:shape()[2]
      if lens then
         for _, v in ipairs(lens:to_table()) do
            if v ~= T then error(('sequence_lens holds %d for %d steps (sequences of full length are read)'):format(v, T), 0) end
         end
      end
      local H = node.attr('hidden_size', R:shape()[3])
      local GH = (lstm and 4 or 3) * H
      local function fastnn_rows(w)   -- [G*H, ...] from ONNX's gate order into fastnn's
         local parts = {}
         for j, q in ipairs(order) do parts[j] = w:narrow(1, (q - 1) * H + 1, H) end
         return fnn().cat(parts, 1)
      end
      local function state(s, d) return s and s:select(layout == 0 and 1 or 2, d) end
      local D = direction == 'bidirectional' and 2 or 1
      local seqs, hs, cs = {}, {}, {}
      for d = 1, D do
         local b_ih, b_hh
         if B then
            local b = B:select(1, d)
            b_ih, b_hh = fastnn_rows(b:narrow(1, 1, GH)), fastnn_rows(b:narrow(1, GH + 1, GH))
         end
         local rev = direction == 'reverse' or d == 2
         local w_ih, w_hh = fastnn_rows(W:select(1, d)), fastnn_rows(R:select(1, d))
         local y
         if lstm then
            y, hs[d], cs[d] = fnn().lstm(X, w_ih, w_hh, b_ih, b_hh, {h0 = state(h0, d), c0 = state(c0, d), reverse = rev})
         else
            y, hs[d] = fnn().gru(X, w_ih, w_hh, b_ih, b_hh, {h0 = state(h0, d), reverse = rev})
         end
         -- a reverse direction's outputs back in the input's step order (fastnn keeps processing order)
         seqs[d] = rev and fnn().nn.Reverse.flip(y, 2) or y
      end
      local Y = fnn().stack(seqs, 3)                     -- [N, T, D, H]
      if layout == 0 then Y = Y:permute(2, 3, 1, 4) end   -- [T, D, N, H]
      local sdim = layout == 0 and 1 or 2
      return Y, fnn().stack(hs, sdim), lstm and fnn().stack(cs, sdim) or nil
   end
end

M.lstm = {onnx = {'LSTM', 'Gather', 'Concat', 'Unsqueeze', 'Transpose', 'Squeeze', 'Reshape', 'Slice'},
          module_class = 'LSTM', export_call = rnn_export_call('LSTM'),
          import = {LSTM = rnn_import('LSTM')}, check = {LSTM = rnn_check('LSTM')}}
M.gru = {onnx = {'GRU', 'Gather', 'Concat', 'Unsqueeze', 'Transpose', 'Squeeze', 'Reshape', 'Slice'},
         module_class = 'GRU', export_call = rnn_export_call('GRU'),
         import = {GRU = rnn_import('GRU')}, check = {GRU = rnn_check('GRU')}}

-- ---- attention: nn.MultiheadAttention as MatMul and Softmax ----
-- one call written whole from the module (heads, scale and causal are the module's and the call's,
-- not numbers the fused attention node exposes): the in-projection as MatMuls by Slices of
-- in_proj_weight (so the file keeps the parameters), heads split by Reshape/Transpose, softmax(scale
-- q k^T + mask) v, the heads merged and out_proj. The causal mask is an additive constant [Tq, Tk],
-- -inf above the diagonal Tk - Tq + 1, built as Trilu of an Expand of a -inf scalar (no mask-sized
-- initializer; the sequence lengths are the traced ones)
-- s + the causal mask for Tq queries and Tk keys (query i sees keys up to i + Tk - Tq): an additive
-- constant, -inf above that diagonal, as Trilu of an Expand of a -inf scalar
local function causal_masked(g, s, Tq, Tk, who)
   if Tq > Tk then
      error(('onnx.export: %s causal with more queries (%d) than keys (%d): rows that see no key are not written'):format(
            who, Tq, Tk), 0)
   end
   local inf = g:node('Expand', {g:constant(-math.huge), g:ints_constant({Tq, Tk})})
   local diag = g:initializer('diagonal', fnn().long({Tk - Tq + 1}):reshape())
   return g:node('Add', {s, g:node('Trilu', {inf, diag}, {upper = 1})})
end

local function mha_export_call(g, call)
   local m, a = call.module, call.args
   local is_tensor = require('fastnn.tensor').is_tensor
   local q, k, v, opts
   if is_tensor(a[2]) then q, k, v, opts = a[1], a[2], a[3], a[4] else q, opts = a[1], a[2]; k, v = q, q end
   if opts and opts.key_padding_mask ~= nil then
      error(('onnx.export: %s with a key_padding_mask is not written (attention without one, causal or not)'):format(
            m:short_str()), 0)
   end
   local causal = opts and opts.causal
   local E, H, D = m.embed_dim, m.num_heads, m.head_dim
   local Tq, Tk = q:shape()[2], k:shape()[2]
   local function name(t) return g:value(t.node, 'attention') end
   local W = name(m.in_proj_weight)
   local b = m.in_proj_bias and name(m.in_proj_bias)
   local zero = g:ints_constant({0})
   local function project(x, i)   -- x W_i^T + b_i, rows i*E .. (i+1)*E of the packed projection
      local lo, hi = g:ints_constant({i * E}), g:ints_constant({(i + 1) * E})
      local y = g:node('MatMul', {x, g:node('Transpose', {g:node('Slice', {W, lo, hi, zero})}, {perm = {1, 0}})})
      if b then y = g:node('Add', {y, g:node('Slice', {b, lo, hi, zero})}) end
      return y
   end
   local split = g:ints_constant({0, 0, H, D})
   local function heads(x, i, perm) return g:node('Transpose', {g:node('Reshape', {project(x, i), split})}, {perm = perm}) end
   local qh = heads(name(q), 0, {0, 2, 1, 3})    -- [N, H, Tq, D]
   local kt = heads(name(k), 1, {0, 2, 3, 1})    -- [N, H, D, Tk]
   local vh = heads(name(v), 2, {0, 2, 1, 3})    -- [N, H, Tk, D]
   local s = g:node('Mul', {g:node('MatMul', {qh, kt}), g:constant(m.scale)})
   if causal then s = causal_masked(g, s, Tq, Tk, m:short_str()) end
   local o = g:node('MatMul', {g:node('Softmax', {s}, {axis = -1}), vh})
   o = g:node('Reshape', {g:node('Transpose', {o}, {perm = {0, 2, 1, 3}}), g:ints_constant({0, 0, E})})
   local y = g:node('MatMul', {o, g:node('Transpose', {name(m.out_proj.weight)}, {perm = {1, 0}})})
   if m.out_proj.bias then y = g:node('Add', {y, name(m.out_proj.bias)}) end
   g:name_of(call.returns[1], y)
end

-- a bare fnn.attention node (q, k, v [B, H, T, D], its scale and causal flag read from the node):
-- softmax(scale q k^T + mask) v; a key padding mask, which the node does not keep, is refused
local function attention_export(g, n)
   if n.attr('padded') ~= 0 then
      error('onnx.export: attention with a key_padding_mask is not written (attention without one, causal or not)', 0)
   end
   local q, k, v = n.inputs[1], n.inputs[2], n.inputs[3]
   local s = g:node('Mul', {g:node('MatMul', {q, g:node('Transpose', {k}, {perm = {0, 1, 3, 2}})}), g:constant(n.attr('scale'))})
   if n.attr('causal') ~= 0 then s = causal_masked(g, s, n.in_shapes[1][3], n.in_shapes[2][3], 'attention') end
   return g:node('MatMul', {g:node('Softmax', {s}, {axis = -1}), v})
end

M.attention = {onnx = {'MatMul', 'Softmax', 'Slice', 'Transpose', 'Reshape', 'Add', 'Mul', 'Expand', 'Trilu'},
               module_class = 'MultiheadAttention', export_call = mha_export_call, export = attention_export}

-- Trilu: the upper (or lower) triangle from diagonal k (fastnn's triu / tril)
M.triu = {onnx = {'Trilu'}, import = {Trilu = function(node, x)
   local kd = x[2] and x[2]:to_table() or 0
   if type(kd) == 'table' then kd = kd[1] end
   if node.attr('upper', 1) ~= 0 then return x[1]:triu(kd) end
   return x[1]:tril(kd)
end}}

-- the casts, comparisons and integer arithmetic torch writes around attention (its scale from the
-- head size, the causal mask as Where of an Equal): read only
local CAST = {[1] = 'float', [7] = 'long', [6] = 'long', [9] = 'float'}   -- float, int64, int32, bool (as 0/1)
M.to_dtype = {onnx = {'Cast'}, import = {Cast = function(node, x)
   local to = node.attr('to')
   if not CAST[to] then error(('Cast to ONNX type %s is not read (float, int32, int64, bool)'):format(tostring(to)), 0) end
   return x[1][CAST[to]](x[1])
end}}
M.eq = {onnx = {'Equal'}, import = {Equal = function(_, x) return x[1]:eq(x[2]) end}}
M.where = {onnx = {'Where'}, import = {Where = function(_, x) return fnn().where(x[1], x[2], x[3]) end}}
-- Split (torch's chunk and split of a packed q/k/v) as narrows: the sizes from the split input, else
-- equal parts, one per output
M.split = {onnx = {'Split'}, import = {Split = function(node, x)
   local axis = node.attr('axis', 0)
   local shape = x[1]:shape()
   if axis < 0 then axis = axis + #shape end
   local sizes = x[2] and x[2]:to_table()
   if not sizes then
      local parts = node.attr('num_outputs', #node.outputs)
      if shape[axis + 1] % parts ~= 0 then
         error(('Split of %d into %d equal parts is not read'):format(shape[axis + 1], parts), 0)
      end
      sizes = {}
      for k = 1, parts do sizes[k] = shape[axis + 1] / parts end
   end
   local out, at = {}, 1
   for k, n in ipairs(sizes) do
      out[k] = x[1]:narrow(axis + 1, at, n)
      at = at + n
   end
   return unpack(out)
end}}

M.fmod = {onnx = {'Mod'}, import = {Mod = function(node, x)
   if x[1]:dtype() == 'float32' or x[1]:numel() ~= 1 or x[2]:numel() ~= 1 then
      error('Mod of more than integer scalars (shape arithmetic) is not read', 0)
   end
   local a, b = x[1]:to_table(), x[2]:to_table()
   if type(a) == 'table' then a = a[1] end
   if type(b) == 'table' then b = b[1] end
   local r = node.attr('fmod', 0) ~= 0 and math.fmod(a, b) or a - math.floor(a / b) * b
   return fnn().long({r}):reshape(unpack(x[1]:shape()))
end}}

-- graph plumbing with no fastnn op of its own: read only
M.shape = {onnx = {'Shape'}, import = {Shape = function(node, x)
   local shape = x[1]:shape()
   local n = #shape
   local lo, hi = node.attr('start', 0), node.attr('end', n)
   if lo < 0 then lo = lo + n end
   if hi < 0 then hi = hi + n end
   local out = {}
   for d = math.max(0, lo) + 1, math.min(n, hi) do out[#out + 1] = shape[d] end
   return fnn().long(out)
end}}
M.identity = {onnx = {'Identity'}, import = {Identity = function(_, x) return x[1] end}}
M.constant = {onnx = {'Constant'}, import = {Constant = function(node)
   local v = node.attr('value')
   if v ~= nil then return v end
   local f, i = node.attr('value_float'), node.attr('value_int')
   if f ~= nil then return fnn().tensor(f) end
   if i ~= nil then return fnn().long({i}):reshape() end
   local fs, is = node.attr('value_floats'), node.attr('value_ints')
   if fs ~= nil then return fnn().tensor(fs) end
   if is ~= nil then return fnn().long(is) end
   error('Constant: no value attribute fnn.onnx.load reads (value, value_float(s), value_int(s))', 0)
end}}

return M
