-- fastnn.keras.sequential: nn.Sequential as a Keras-style model (installed by Sequential.lua).
--   local model = nn.Sequential():add(nn.Dense(16, 'relu')):add(nn.Dense(1)):build{8, 4}
--   model:output_shape()            --> {8, 1}      model:output_shape{32, 4} --> {32, 1}
--   model:input_shape()             --> {8, 4}
-- build(shape) gives each layer the shape that reaches it (the batch dim included; any batch size
-- works afterwards): a Keras-style layer makes its weights for it, and every layer is checked
-- against it before any data moves. A stack that does not agree is refused naming the layer's
-- position, its type, the shape it got and the shape it needed:
--   Sequential:build: layer 2 (nn.Linear(784 -> 128)) got input [8,100], needs [8,784]
-- or, for a layer without a rule, its own refusal:
--   Sequential:build: layer 3 (nn.Reshape(5, 5)) cannot take input [8,16]: Reshape(...): ...
-- The rest of the model methods (compile, fit, evaluate, predict, summary, ...) are
-- fastnn/keras/model.lua's.
local shape = require 'fastnn.nn.shape'
local model = require 'fastnn.keras.model'
local fail = model.fail

local M = {}

-- the shape after each layer for input shape s: {s, after 1, after 2, ...}; builds lazy layers
local function walk(self, s, op)
   local bad = shape.check(s)
   if bad then fail(('%s: %s'):format(op, bad)) end
   local shapes = {shape.copy(s)}
   local cur = shapes[1]
   for i = 1, #self do
      local layer = self[i]
      local ok, err = true, nil
      if type(layer.build) == 'function' then ok, err = pcall(layer.build, layer, cur) end
      local out, why, is_msg
      if ok then
         out, why, is_msg = shape.infer(layer, cur)
      else
         why, is_msg = shape.strip_where(err), true
      end
      if not out then
         if is_msg then
            fail(('%s: layer %d (%s) cannot take input %s: %s'):format(op, i, layer:short_str(), shape.str(cur), why))
         end
         fail(('%s: layer %d (%s) got input %s, needs %s'):format(op, i, layer:short_str(), shape.str(cur), why))
      end
      cur = out
      shapes[i + 1] = cur
   end
   return shapes
end

function M.install(Sequential)
   model.install(Sequential)
   Sequential._keras_single_input, Sequential._keras_single_output = true, true

   local function build(self, s)
      local shapes = walk(self, s, 'Sequential:build')
      rawset(self, '_shapes', shapes)
      rawset(self, '_input_shapes', {shapes[1]})
      rawset(self, 'built', true)
      model._bind(self)
      return self
   end
   Sequential.build = model.checked('build', build, model.guarded(build))

   -- output_shape(): the built model's; output_shape(s): for inputs of shape s
   local function output_shape(self, s)
      if s == nil then
         local shapes = rawget(self, '_shapes')
         if not shapes then fail('Sequential:output_shape: the model is not built; call build(input_shape) first') end
         return shape.copy(shapes[#shapes])
      end
      local shapes = walk(self, s, 'Sequential:output_shape')
      return shapes[#shapes]
   end
   Sequential.output_shape = model.checked('output_shape', output_shape, model.guarded(output_shape))

   function Sequential:_keras_arity() return 1, 1 end
   function Sequential:_keras_forward(xs) return {self:forward(xs[1])} end
   function Sequential:_keras_build(shapes) return Sequential.build(self, shapes[1]) end
   function Sequential:_keras_rows()
      local shapes = rawget(self, '_shapes')
      local rows = {}
      for i = 1, #self do
         local layer = self[i]
         local s = shapes and shapes[i + 1]
         rows[i] = {('%d %s'):format(i, layer:short_str()), s and shape.keras_str(s) or '?',
                    model.grouped(layer:num_parameters())}
      end
      return rows, 'sequential'
   end
   return Sequential
end

return M
