-- fnn.onnx.export, checked by the real clients: onnx.checker.check_model (full_check) accepts the
-- file and onnxruntime runs it with fastnn's outputs within 1e-5, at the example batch and, with
-- dynamic_batch, at another one (spec/onnx_run.py). fnn.onnx.load reads each of those files back
-- (same outputs, same parameter gradients), and the files torch.onnx.export writes of the same
-- families (spec/onnx_torch_models.py) with PyTorch's outputs within 1e-5. Without onnx and
-- onnxruntime the part that runs them is left out with a note, unless FASTNN_REQUIRE_ONNX=1, where
-- their absence fails.
local fnn = require 'fastnn'
local process = require 'spec.process'
local json = require 'fastnn.json'
local support = require 'support'
local nn = fnn.nn

local dir = process.tmpdir()
teardown(function() os.execute('rm -rf ' .. process.quote(dir)) end)
local cwd = process.cwd

describe('onnx.load refuses', function()
   it('a missing file, a file that is not ONNX, a bad path, and a call with the wrong inputs', function()
      local function err(f) return support.err_of(f) end
      assert.matches('onnx_spec%.lua:%d+: onnx%.load: cannot open .*/none%.onnx: No such file',
                     err(function() fnn.onnx.load(dir .. '/none.onnx') end))
      local f = assert(io.open(dir .. '/junk.onnx', 'wb'))
      f:write('\255\255\255 not a protocol buffer')
      f:close()
      assert.matches('onnx_spec%.lua:%d+: onnx%.load: .*/junk%.onnx is not an ONNX model',
                     err(function() fnn.onnx.load(dir .. '/junk.onnx') end))
      assert.matches('onnx%.load: path is 3, expected a file name', err(function() fnn.onnx.load(3) end))
      -- a file of our own, called with two inputs where it takes one
      local m = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
      fnn.onnx.export(m, fnn.randn(2, 4), dir .. '/one_input.onnx')
      local loaded = fnn.onnx.load(dir .. '/one_input.onnx')
      assert.matches('onnx_spec%.lua:%d+: nn%.OnnxModel%(one_input%.onnx: 3 nodes, 1 %-> 1 values%): takes 1 inputs '
                     .. '%(input%), got 2', err(function() loaded(fnn.randn(2, 4), fnn.randn(2, 4)) end))
      assert.matches("onnx_spec%.lua:%d+: .*node 'Gemm_%d+' %(Gemm%): linear: input %[2,5%] and weight %[3,4%] do not agree",
                     err(function() loaded(fnn.randn(2, 5)) end))
   end)
end)

describe('onnx.export refuses', function()
   it('an op it has no mapping for, by name and module path', function()
      local m = nn.Sequential(nn.Linear(4, 3), nn.Softplus())
      assert.matches("onnx_spec%.lua:%d+: onnx%.export: the op 'softplus' in module 2 %(nn%.Softplus%) has no ONNX "
                     .. 'mapping %(fastnn%.onnx%.ops maps .*linear.*relu',
                     support.err_of(function() fnn.onnx.export(m, fnn.randn(2, 4), dir .. '/x.onnx') end))
      -- inside a nested module, not its output: the module whose output needs it
      local inner = nn.Sequential(nn.Linear(4, 4), nn.Mish(), nn.ReLU())
      local outer = nn.Sequential(nn.Linear(4, 4), inner, nn.Linear(4, 2))
      local err = support.err_of(function() fnn.onnx.export(outer, fnn.randn(2, 4), dir .. '/y.onnx') end)
      assert.matches("onnx%.export: the op 'mish' in module 2%.2 %(nn%.Mish[^)]*%) has no ONNX mapping", err)
      -- a batch norm without running statistics: by name, with what to do
      local bn = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4, {track_running_stats = false}))
      assert.matches('onnx%.export: batch_norm with batch statistics %(training mode, or track_running_stats = false%)',
                     support.err_of(function() fnn.onnx.export(bn, fnn.randn(2, 4), dir .. '/z.onnx') end))
      -- the model is left callable as before (its forwards unwrapped)
      assert.is_nil(rawget(outer, 'forward'))
      assert.same({2, 2}, outer(fnn.randn(2, 4)):shape())
   end)

   it('bad arguments and options', function()
      local m = nn.Linear(4, 3)
      local function err(f) return support.err_of(f) end
      assert.matches('onnx_spec%.lua:%d+: onnx%.export: model is 3, expected a module',
                     err(function() fnn.onnx.export(3, fnn.randn(2, 4), dir .. '/x.onnx') end))
      assert.matches("onnx%.export: example_inputs is 'x', expected a tensor or a list of tensors",
                     err(function() fnn.onnx.export(m, 'x', dir .. '/x.onnx') end))
      assert.matches('onnx%.export: path is nil, expected a file name',
                     err(function() fnn.onnx.export(m, fnn.randn(2, 4)) end))
      assert.matches('onnx_spec%.lua:%d+: onnx%.export: opset',
                     err(function() fnn.onnx.export(m, fnn.randn(2, 4), dir .. '/x.onnx', {opset = 13}) end))
      assert.matches("onnx%.export: unknown option 'dynamic'",
                     err(function() fnn.onnx.export(m, fnn.randn(2, 4), dir .. '/x.onnx', {dynamic = true}) end))
   end)

   it('leaves the model as it was: training mode and frozen parameters', function()
      local m = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
      m:parameters()[1]:freeze()
      m:train()
      fnn.onnx.export(m, fnn.randn(2, 4), dir .. '/kept.onnx')
      assert.is_true(m.training)
      assert.is_true(m:parameters()[1]:frozen())
      assert.is_false(m:parameters()[2]:frozen())
   end)
end)

-- ---------------------------------------------------------------------------
-- onnx and onnxruntime run what we write

local function have_onnx()
   return os.execute('python3 -c "import onnx, onnxruntime, safetensors" >/dev/null 2>&1') == 0
end

if not have_onnx() and os.getenv('FASTNN_REQUIRE_ONNX') ~= '1' then
   io.stderr:write('onnx_spec: python3 with onnx, onnxruntime and safetensors not found (pip install onnx '
                   .. 'onnxruntime safetensors): the part where onnxruntime runs our files is left out\n')
   return
end

-- a model's outputs as a list, a returned state {h, c} as its tensors (as fnn.onnx.export writes them)
local function outputs_of(model, set)
   local out = {}
   for _, y in ipairs({model(unpack(set))}) do
      if type(y) == 'table' and not fnn.is_tensor(y) then
         for _, t in ipairs(y) do out[#out + 1] = t end
      else
         out[#out + 1] = y
      end
   end
   return out
end

-- export model on inputs, run the file in onnxruntime on each input set, and compare with fastnn
-- (every output: an LSTM's sequence and final states)
local function round_trip(name, model, inputs, sets, opts)
   local path = dir .. '/' .. name .. '.onnx'
   fnn.onnx.export(model, inputs, path, opts)
   model:eval()
   local files = {}
   for k, set in ipairs(sets) do
      local feeds = {}
      for i, x in ipairs(set) do feeds[#set == 1 and 'input' or 'input' .. i] = x end
      files[k] = ('%s/%s_%d.safetensors'):format(dir, name, k)
      fnn.save_safetensors(feeds, files[k])
   end
   local quoted = {}
   for k, f in ipairs(files) do quoted[k] = process.quote(f) end
   local p = io.popen(('python3 %s/spec/onnx_run.py %s %s 2>&1; echo "exit=$?"'):format(cwd, process.quote(path),
                      table.concat(quoted, ' ')))
   local out = p:read('*a')
   p:close()
   local body, rc = out:match('^(.-)exit=(%d+)%s*$')
   assert(rc == '0', 'spec/onnx_run.py failed:\n' .. out)
   for k, set in ipairs(sets) do
      local want = fnn.no_grad(function() return outputs_of(model, set) end)
      local out = fnn.load_safetensors(files[k] .. '.out.safetensors')
      for i, w in ipairs(want) do
         local got = out[#want == 1 and 'output' or 'output' .. i]
         assert.same(w:shape(), got:shape())
         local diff = (w - got):abs():max():item()
         assert.is_true(diff <= 1e-5, ('%s, input set %d, output %d: fastnn and onnxruntime differ by %g'):format(name,
                        k, i, diff))
      end
   end
   -- and back in: fnn.onnx.load gives the same outputs, and the same gradients for the same parameters
   local loaded = fnn.onnx.load(path)
   for k, set in ipairs(sets) do
      model:zero_grad()
      loaded:zero_grad()
      local wants, gots = outputs_of(model, set), {loaded(unpack(set))}
      assert.equals(#wants, #gots)
      local want_loss, got_loss = 0, 0
      for i, want in ipairs(wants) do
         local got = gots[i]
         local diff = (want - got):abs():max():item()
         assert.is_true(diff <= 1e-5, ('%s, input set %d, output %d: fastnn and its loaded file differ by %g'):format(
                        name, k, i, diff))
         want_loss, got_loss = want_loss + fnn.sum(want * want), got_loss + fnn.sum(got * got)
      end
      want_loss:backward()
      got_loss:backward()
      local mine = {}
      for _, pair in ipairs(loaded:named_parameters()) do mine[pair[1]] = pair[2] end
      for _, pair in ipairs(model:named_parameters()) do
         local p = mine[pair[1]]
         assert.is_truthy(p, name .. ': the loaded model has no parameter ' .. pair[1])
         local gdiff = (pair[2]:grad() - p:grad()):abs():max():item()
         assert.is_true(gdiff <= 1e-4, ('%s: gradients of %s differ by %g'):format(name, pair[1], gdiff))
      end
   end
   return json.decode(body)
end

describe('onnx.export writes MLPs onnxruntime runs with fastnn\'s numbers', function()
   it('Linear and ReLU as Gemm and Relu, weights as initializers named as named_parameters', function()
      fnn.manual_seed(1)
      local m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
      local x = fnn.randn(5, 4)
      local info = round_trip('relu', m, x, {{x}})
      assert.same({'Gemm', 'Relu', 'Gemm', 'Identity'}, info.ops)
      assert.same({'1.weight', '1.bias', '3.weight', '3.bias'}, info.initializers)
      assert.same({{'input', {5, 4}}}, info.inputs)
      assert.same({{'output', {5, 3}}}, info.outputs)
      assert.same({17, 8}, {info.opset, info.ir_version})
   end)

   it('with a dynamic batch, at other batch sizes too', function()
      fnn.manual_seed(2)
      local m = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Sigmoid(), nn.Linear(16, 2))
      local info = round_trip('dynamic', m, fnn.randn(3, 6), {{fnn.randn(3, 6)}, {fnn.randn(11, 6)}, {fnn.randn(1, 6)}},
                              {dynamic_batch = true, input_names = {'input'}, output_names = {'output'}})
      assert.same({{'input', {'batch', 6}}}, info.inputs)
      assert.same({{'output', {'batch', 2}}}, info.outputs)
   end)

   it('GELU (exact, through Erf), SiLU, and a Linear without bias', function()
      fnn.manual_seed(3)
      local m = nn.Sequential(nn.Linear(5, 12), nn.GELU(), nn.Linear(12, 12, {bias = false}), nn.SiLU(), nn.Linear(12, 4))
      local x = fnn.randn(4, 5) * 3
      local info = round_trip('gelu', m, x, {{x}, {fnn.randn(9, 5) * 3}}, {dynamic_batch = true})
      -- the parameters (3 has no bias), then GELU's constants (sqrt 2, 1, 0.5)
      assert.same({'1.weight', '1.bias', '3.weight', '5.weight', '5.bias'}, {unpack(info.initializers, 1, 5)})
      assert.equals(8, #info.initializers)
      local has = {}
      for _, op in ipairs(info.ops) do has[op] = true end
      assert.is_true(has.Erf and has.Sigmoid and has.Gemm, table.concat(info.ops, ' '))
   end)

   it('a sequence input [N, T, F] through Linear (MatMul), and Flatten of pictures', function()
      fnn.manual_seed(4)
      local seq = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
      local x = fnn.randn(2, 7, 3)
      local info = round_trip('seq', seq, x, {{x}, {fnn.randn(4, 7, 3)}}, {dynamic_batch = true})
      assert.is_nil(table.concat(info.ops, ' '):find('Gemm'))
      local pics = nn.Sequential(nn.Flatten(), nn.Linear(16, 6), nn.ReLU(), nn.Linear(6, 3))
      local img = fnn.rand(3, 1, 4, 4)
      round_trip('flatten', pics, img, {{img}, {fnn.rand(5, 1, 4, 4)}}, {dynamic_batch = true})
   end)

   it('LeakyReLU and ELU with their parameters, Softmax and LogSoftmax along their dim', function()
      fnn.manual_seed(6)
      local m = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8), nn.ELU(0.7), nn.Linear(8, 5),
                              nn.Softmax(2))
      local x = fnn.randn(3, 4) * 2
      local info = round_trip('softmax', m, x, {{x}, {fnn.randn(7, 4) * 2}}, {dynamic_batch = true})
      local has = {}
      for _, op in ipairs(info.ops) do has[op] = true end
      assert.is_true(has.LeakyRelu and has.Elu and has.Softmax, table.concat(info.ops, ' '))
      -- along the middle dim of [N, T, F]
      local seq = nn.Sequential(nn.Linear(4, 6), nn.LogSoftmax(2))
      local s = fnn.randn(2, 5, 4)
      round_trip('log_softmax', seq, s, {{s}, {fnn.randn(3, 5, 4)}}, {dynamic_batch = true})
   end)

   it('convolutional nets: Conv (padded, strided, grouped, dilated, without bias; 1-d and 2-d), MaxPool and '
      .. 'AveragePool (ceil_mode, count_include_pad), a Conv with its relu', function()
      fnn.manual_seed(7)
      local m = nn.Sequential(nn.Conv2d(1, 4, 3, {padding = 1}), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(4, 8, 3, {stride = 2, padding = 1, groups = 2, bias = false}), nn.ReLU(),
                              nn.Conv2d(8, 8, 3, {padding = 2, dilation = 2}),
                              nn.AvgPool2d(2, {ceil_mode = true, count_include_pad = false}), nn.Flatten(),
                              nn.Linear(32, 3))
      local x = fnn.randn(2, 1, 13, 13)
      local info = round_trip('cnn', m, x, {{x}, {fnn.randn(5, 1, 13, 13)}}, {dynamic_batch = true})
      assert.same({'Conv', 'Relu', 'MaxPool', 'Conv', 'Relu', 'Conv', 'AveragePool', 'Flatten', 'Gemm', 'Identity'},
                  info.ops)
      -- a convolution with its relu in the node: Conv then Relu
      local fused = nn.Sequential(nn.Conv2d(1, 4, 3, {padding = 1, activation = 'relu'}), nn.MaxPool2d(2), nn.Flatten(),
                                  nn.Linear(36, 3))
      local xf = fnn.randn(2, 1, 6, 6)
      info = round_trip('conv_relu', fused, xf, {{xf}})
      assert.same({'Conv', 'Relu', 'MaxPool', 'Flatten', 'Gemm', 'Identity'}, info.ops)
      local c1 = nn.Sequential(nn.Conv1d(3, 6, 5, {padding = 2, stride = 2}), nn.Tanh(), nn.AvgPool1d(3, {padding = 1}),
                               nn.MaxPool1d(2, {ceil_mode = true}))
      local s = fnn.randn(4, 3, 17)
      round_trip('conv1d', c1, s, {{s}, {fnn.randn(2, 3, 17)}}, {dynamic_batch = true})
   end)

   it('batch norm (eval mode: running statistics as initializers under their buffer names; affine or not)', function()
      fnn.manual_seed(9)
      local m = nn.Sequential(nn.Conv2d(2, 4, 3, {padding = 1}), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                              nn.Linear(4 * 5 * 5, 3), nn.BatchNorm1d(3, {affine = false}))
      for _ = 1, 3 do m(fnn.randn(8, 2, 5, 5)) end   -- training steps move the running statistics
      local x = fnn.randn(3, 2, 5, 5)
      local info = round_trip('batch_norm', m, x, {{x}, {fnn.randn(6, 2, 5, 5)}}, {dynamic_batch = true})
      local inits = {}
      for _, name in ipairs(info.initializers) do inits[name] = true end
      assert.is_true(inits['2.running_mean'] and inits['2.running_var'] and inits['6.running_var'],
                     table.concat(info.initializers, ' '))
   end)

   it('upsampling as Resize: nearest by a factor and to a size, bilinear with half-pixel centres and aligned corners', function()
      fnn.manual_seed(10)
      local m = nn.Sequential(nn.Conv2d(2, 3, 3, {padding = 1}), nn.UpSampling2d(2), nn.ReLU(),
                              nn.UpSampling2d(2, {mode = 'bilinear'}),
                              nn.UpSampling2d{size = {29, 31}, mode = 'bilinear', align_corners = true},
                              nn.UpSampling2d{size = {58, 93}})
      local x = fnn.randn(2, 2, 3, 4)
      local info = round_trip('resize', m, x, {{x}, {fnn.randn(3, 2, 3, 4)}}, {dynamic_batch = true})
      assert.same({'Conv', 'Resize', 'Relu', 'Resize', 'Resize', 'Resize', 'Identity'}, info.ops)
   end)

   it('LayerNorm (with and without its weight and bias) as LayerNormalization', function()
      fnn.manual_seed(8)
      local m = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.GELU(), nn.Linear(6, 6),
                              nn.LayerNorm(6, {elementwise_affine = false}), nn.Linear(6, 3))
      local x = fnn.randn(3, 4)
      local info = round_trip('layer_norm', m, x, {{x}, {fnn.randn(5, 4)}}, {dynamic_batch = true})
      local n = 0
      for _, op in ipairs(info.ops) do if op == 'LayerNormalization' then n = n + 1 end end
      assert.equals(2, n)
   end)

   -- count of each ONNX operator in a written file
   local function op_counts(info)
      local n = {}
      for _, op in ipairs(info.ops) do n[op] = (n[op] or 0) + 1 end
      return n
   end

   it('nn.LSTM and nn.GRU as ONNX\'s LSTM and GRU: sequence and final states, one node per layer', function()
      fnn.manual_seed(11)
      local lstm = nn.LSTM(3, 5)
      local x = fnn.randn(2, 6, 3)
      local info = round_trip('lstm', lstm, x, {{x}, {fnn.randn(2, 6, 3) * 2}})
      assert.same({'weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0'}, {unpack(info.initializers, 1, 4)})
      assert.equals(1, op_counts(info).LSTM)
      assert.same({{'output1', {2, 6, 5}}, {'output2', {1, 2, 5}}, {'output3', {1, 2, 5}}}, info.outputs)
      -- two layers without biases, then a head reading the sequence (MatMul)
      local gru = nn.Sequential(nn.GRU(4, 6, {num_layers = 2, bias = false}), nn.Linear(6, 2))
      local s = fnn.randn(3, 5, 4)
      info = round_trip('gru_stack', gru, s, {{s}, {fnn.randn(3, 5, 4)}})
      assert.equals(2, op_counts(info).GRU)
      assert.same({'1.weight_ih_l0', '1.weight_hh_l0', '1.weight_ih_l1', '1.weight_hh_l1'}, {unpack(info.initializers, 1, 4)})
   end)

   it('bidirectional stacks, initial states given, the last step only, go_backwards', function()
      fnn.manual_seed(12)
      -- nn.LSTM takes its state as a table {h, c}: a model of three inputs hands it on
      local Stateful = nn.Module:extend('StatefulLSTM')
      function Stateful:__init(rnn) self.rnn = rnn end
      function Stateful:forward(x, h, c) return self.rnn(x, {h, c}) end
      local lstm = Stateful(nn.LSTM(3, 4, {num_layers = 2, bidirectional = true}))
      local x, h, c = fnn.randn(2, 5, 3), fnn.randn(4, 2, 4), fnn.randn(4, 2, 4)
      local info = round_trip('lstm_bidir_state', lstm, {x, h, c}, {{x, h, c}, {fnn.randn(2, 5, 3), fnn.randn(4, 2, 4),
                              fnn.randn(4, 2, 4)}})
      assert.equals(2, op_counts(info).LSTM)
      assert.same({2, 5, 8}, info.outputs[1][2])
      local gru = nn.GRU(3, 4, {num_layers = 2, bidirectional = true})
      local g0 = fnn.randn(4, 3, 4)
      local s = fnn.randn(3, 7, 3)
      round_trip('gru_bidir_state', gru, {s, g0}, {{s, g0}, {fnn.randn(3, 7, 3), fnn.randn(4, 3, 4)}})
      -- the last step only: [N, H], and [N, 2H] for both directions
      local last = nn.GRU(3, 4, {bidirectional = true, return_sequences = false})
      info = round_trip('gru_last', last, s, {{s}})
      assert.same({3, 8}, info.outputs[1][2])
      local last1 = nn.LSTM(3, 4, {return_sequences = false})
      round_trip('lstm_last', last1, s, {{s}})
      -- go_backwards: the input reversed in time (Slice, step -1), outputs in processing order
      local back = nn.LSTM(3, 4, {num_layers = 2, go_backwards = true})
      info = round_trip('lstm_backwards', back, s, {{s}, {fnn.randn(3, 7, 3)}})
      assert.equals(1, op_counts(info).Slice)
   end)

   it('a dynamic batch through an LSTM', function()
      fnn.manual_seed(13)
      local m = nn.Sequential(nn.LSTM(3, 4), nn.Linear(4, 2))
      local info = round_trip('lstm_dynamic', m, fnn.randn(2, 5, 3), {{fnn.randn(2, 5, 3)}, {fnn.randn(7, 5, 3)}},
                              {dynamic_batch = true})
      assert.same({{'input', {'batch', 5, 3}}}, info.inputs)
   end)

   it('nn.MultiheadAttention as MatMul and Softmax: self-attention, causal (an additive -inf mask), cross '
      .. 'attention without biases, inside a transformer-like block and an nn.TransformerEncoderLayer', function()
      fnn.manual_seed(14)
      local mha = nn.MultiheadAttention(8, 2)
      local x = fnn.randn(2, 5, 8)
      local info = round_trip('mha', mha, x, {{x}, {fnn.randn(3, 5, 8)}}, {dynamic_batch = true})
      local n = op_counts(info)
      assert.same({4, 1}, {n.Reshape, n.Softmax})   -- q, k, v split into heads, merged once
      assert.is_nil(n.Trilu)
      assert.same({'in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'}, {unpack(info.initializers, 1, 4)})
      -- causal: the mask is what makes fastnn's numbers (a file without it would differ)
      local Causal = nn.Module:extend('CausalBlock')
      function Causal:__init()
         self.attn = nn.MultiheadAttention(8, 4)
         self.norm = nn.LayerNorm(8)
         self.ff = nn.Linear(8, 8)
      end
      function Causal:forward(h) return self.ff(self.norm(h + self.attn(h, {causal = true}))) end
      local block = Causal()
      info = round_trip('mha_causal', block, x, {{x}, {fnn.randn(4, 5, 8)}}, {dynamic_batch = true})
      assert.equals(1, op_counts(info).Trilu)
      local plain = fnn.no_grad(function() return block.ff(block.norm(x + block.attn(x))) end)
      assert.is_true((plain - block(x)):abs():max():item() > 1e-3)
      -- cross attention: queries from one sequence, keys and values from another of another length
      local Cross = nn.Module:extend('CrossAttention')
      function Cross:__init() self.attn = nn.MultiheadAttention(8, 4, {bias = false}) end
      function Cross:forward(q, kv) return self.attn(q, kv, kv) end
      local q, kv = fnn.randn(2, 3, 8), fnn.randn(2, 6, 8)
      round_trip('mha_cross', Cross(), {q, kv}, {{q, kv}, {fnn.randn(2, 3, 8), fnn.randn(2, 6, 8)}})
      -- a whole nn.TransformerEncoderLayer (attention, LayerNorms, the feed-forward; dropout off in eval)
      info = round_trip('encoder_layer', nn.TransformerEncoderLayer(8, 2, 16), x, {{x}, {fnn.randn(3, 5, 8)}},
                        {dynamic_batch = true})
      assert.same({1, 2}, {op_counts(info).Softmax, op_counts(info).LayerNormalization})
      -- the stacks: nn.TransformerEncoder of two layers, and the GPT-style causal stack (pre-norm, GELU,
      -- a final LayerNorm)
      info = round_trip('encoder_stack', nn.TransformerEncoder(8, 2, 16, 2, {dropout = 0}), x,
                        {{x}, {fnn.randn(3, 5, 8)}}, {dynamic_batch = true})
      assert.same({2, 4}, {op_counts(info).Softmax, op_counts(info).LayerNormalization})
      info = round_trip('causal_stack', nn.TransformerStack.causal(8, 2, 16, 2), x, {{x}, {fnn.randn(3, 5, 8)}},
                        {dynamic_batch = true})
      assert.same({2, 2, 5}, {op_counts(info).Softmax, op_counts(info).Trilu, op_counts(info).LayerNormalization})
   end)

   -- a model that calls fnn.attention itself (as bench/char_gpt.lua does): the packed q/k/v split by
   -- narrow (Slice), heads by reshape and transpose (Transpose), the fused node written from its own
   -- scale and causal flag (fnn_node_attr), the heads merged back through contiguous (Identity)
   it('a GPT-style decoder written with fnn.attention: narrow, transpose, causal attention, GELU MLP', function()
      fnn.manual_seed(15)
      local Block = nn.Module:extend('GptBlock')
      function Block:__init(C, H)
         self.C, self.H = C, H
         self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
         self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
         self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
      end
      function Block:forward(x)
         local B, T = x:shape()[1], x:shape()[2]
         local C, H = self.C, self.H
         local qkv = self.qkv(self.ln1(x))
         local function heads(i) return qkv:narrow(3, i * C + 1, C):reshape(B, T, H, C / H):transpose(2, 3) end
         local a = fnn.attention(heads(0), heads(1), heads(2), {causal = true})
         x = x + self.proj(a:transpose(2, 3):contiguous():reshape(B, T, C))
         return x + self.fc2(self.fc1(self.ln2(x)):gelu())
      end
      local Gpt = nn.Module:extend('TinyGpt')
      function Gpt:__init()
         self.b1, self.b2, self.ln, self.head = Block(16, 4), Block(16, 4), nn.LayerNorm(16), nn.Linear(16, 11)
      end
      function Gpt:forward(x) return self.head(self.ln(self.b2(self.b1(x)))) end
      local gpt, x = Gpt(), fnn.randn(2, 6, 16)
      local info = round_trip('gpt', gpt, x, {{x}, {fnn.randn(2, 6, 16)}})
      local n = op_counts(info)
      assert.same({2, 2, 6}, {n.Softmax, n.Trilu, n.Slice})
      -- the mask is what makes fastnn's numbers: the same blocks without it differ
      local open = fnn.no_grad(function()
         local qkv = gpt.b1.qkv(gpt.b1.ln1(x))
         local function heads(i) return qkv:narrow(3, i * 16 + 1, 16):reshape(2, 6, 4, 4):transpose(2, 3) end
         return fnn.attention(heads(0), heads(1), heads(2)) - fnn.attention(heads(0), heads(1), heads(2), {causal = true})
      end)
      assert.is_true(open:abs():max():item() > 1e-3)
      -- the whole GPT from token ids: nn.Embedding as Gather of the weight's rows at an int64 input,
      -- positions (made inside forward by fnn.arange) as a constant
      local Lm = nn.Module:extend('TinyLm')
      function Lm:__init() self.tok, self.pos, self.body = nn.Embedding(11, 16), nn.Embedding(6, 16), Gpt() end
      function Lm:forward(ids)
         local T = ids:shape()[2]
         return self.body.head(self.body.ln(self.body.b2(self.body.b1(self.tok(ids) + self.pos(fnn.arange(1, T + 1):long())))))
      end
      local ids = fnn.long{{1, 5, 11, 2, 2, 7}, {3, 3, 9, 4, 10, 1}}
      info = round_trip('gpt_ids', Lm(), ids, {{ids}, {fnn.long{{2, 2, 2, 8, 6, 5}, {11, 1, 4, 4, 3, 9}}}})
      assert.same({2, 2}, {op_counts(info).Gather, op_counts(info).Sub})
      assert.same({'input', {2, 6}}, info.inputs[1])
      -- ids made inside forward that are not positions (here computed from the input) are refused by name
      local Shifted = nn.Module:extend('ShiftedIds')
      function Shifted:__init() self.tok = nn.Embedding(11, 4) end
      function Shifted:forward(x) return self.tok((x * 0 + 1):long()) end
      assert.matches('onnx%.export: nn%.Embedding.* reads ids that are no input of the model',
                     support.err_of(function() fnn.onnx.export(Shifted(), fnn.randn(2, 3), dir .. '/s.onnx') end))
      -- a bare attention node with a key padding mask is refused by name
      local Padded = nn.Module:extend('PaddedAttention')
      function Padded:forward(q) return fnn.attention(q, q, q, {key_padding_mask = fnn.zeros(1, 3)}) end
      assert.matches('onnx%.export: attention with a key_padding_mask is not written',
                     support.err_of(function() fnn.onnx.export(Padded(), fnn.randn(1, 2, 3, 4), dir .. '/p.onnx') end))
   end)

   it('refuses attention it cannot write: a key padding mask, causal with more queries than keys', function()
      local Masked = nn.Module:extend('MaskedAttention')
      function Masked:__init() self.attn = nn.MultiheadAttention(4, 2) end
      function Masked:forward(x) return self.attn(x, {key_padding_mask = fnn.zeros(2, 3)}) end
      assert.matches('onnx%.export: nn%.MultiheadAttention.* with a key_padding_mask is not written',
                     support.err_of(function() fnn.onnx.export(Masked(), fnn.randn(2, 3, 4), dir .. '/m.onnx') end))
      local Wide = nn.Module:extend('WideCausal')
      function Wide:__init() self.attn = nn.MultiheadAttention(4, 2) end
      function Wide:forward(q, kv) return self.attn(q, kv, kv, {causal = true}) end
      assert.matches('onnx%.export: nn%.MultiheadAttention.* causal with more queries %(5%) than keys %(2%)',
                     support.err_of(function() fnn.onnx.export(Wide(), {fnn.randn(1, 5, 4), fnn.randn(1, 2, 4)},
                                                               dir .. '/w.onnx') end))
   end)

   it('transposed convolutions as ConvTranspose (strided, output_padding, groups, dilation, uneven padding, '
      .. '1-3d) and joins (cat as Concat, stack as Unsqueeze and Concat)', function()
      fnn.manual_seed(16)
      local Up = nn.Module:extend('UpNet')
      function Up:__init()
         self.a = nn.ConvTranspose2d(4, 6, 3, {stride = 2, padding = 1, output_padding = 1, groups = 2})
         self.b = nn.ConvTranspose2d(6, 2, 3, {dilation = 2, padding = {{1, 2}, {0, 1}}, bias = false})
      end
      function Up:forward(x) return self.b(self.a(x):relu()) end
      local x = fnn.randn(2, 4, 5, 6)
      local info = round_trip('conv_transpose2d', Up(), x, {{x}, {fnn.randn(3, 4, 5, 6)}}, {dynamic_batch = true})
      assert.equals(2, op_counts(info).ConvTranspose)
      local s = fnn.randn(2, 3, 7)
      round_trip('conv_transpose1d', nn.ConvTranspose1d(3, 2, 4, {stride = 3, padding = 2}), s, {{s}})
      local v = fnn.randn(1, 2, 3, 4, 3)
      round_trip('conv_transpose3d', nn.ConvTranspose3d(2, 3, 2, {stride = 2}), v, {{v}})
      -- joins: two branches concatenated along the features, and stacked along a new dim
      local Join = nn.Module:extend('JoinNet')
      function Join:__init() self.l1, self.l2 = nn.Linear(4, 3), nn.Linear(4, 3) end
      function Join:forward(x)
         local a, b = self.l1(x), self.l2(x):tanh()
         return fnn.cat({a, b, a * b}, 2), fnn.stack({a, b}, 2)
      end
      local j = fnn.randn(5, 4)
      info = round_trip('joins', Join(), j, {{j}, {fnn.randn(2, 4)}}, {dynamic_batch = true})
      assert.same({2, 2}, {op_counts(info).Concat, op_counts(info).Unsqueeze})
   end)

   -- reshapes that do not keep the first dim: [B, T, C] -> [B T, C] and back (a language model's head),
   -- [B, 12] -> [B, 3, 4] -> [3 B, 4]; with a dynamic batch the merged dim follows the batch
   it('reshapes that merge the batch into the first dim, with a dynamic batch', function()
      fnn.manual_seed(17)
      local Head = nn.Module:extend('TokenHead')
      function Head:__init() self.proj = nn.Linear(4, 5) end
      function Head:forward(x)
         local B, T = x:shape()[1], x:shape()[2]
         local y = self.proj(x:reshape(B * T, 4)):reshape(B, T, 5)
         return y, y:reshape(B, 15):reshape(B, 3, 5):reshape(B * 3, 5)
      end
      local x = fnn.randn(2, 3, 4)
      local info = round_trip('merged_batch', Head(), x, {{x}, {fnn.randn(5, 3, 4)}}, {dynamic_batch = true})
      assert.equals(1, op_counts(info).Flatten)   -- [B, 15] from [B, 3, 5]; [B T, C] is no Flatten of [B, T, C]
   end)

   it('a Keras-style Dense stack', function()
      fnn.manual_seed(5)
      local m = nn.Sequential():add(nn.Dense(8, 'relu')):add(nn.Dense(8, 'tanh')):add(nn.Dense(1)):build{2, 4}
      round_trip('dense', m, fnn.randn(2, 4), {{fnn.randn(2, 4)}, {fnn.randn(6, 4)}}, {dynamic_batch = true})
   end)
end)

describe('onnx.load runs the files torch.onnx.export writes, with PyTorch\'s outputs', function()
   local listed
   local function recurrent(model) return model.name:find('lstm') or model.name:find('gru') end
   local function attention(model) return model.name:find('mha') or model.name:find('sdpa') end
   -- a file's outputs from its inputs, each within 1e-5 of PyTorch's
   local function check_outputs(model)
      local m = fnn.onnx.load(model.path)
      local io_ = fnn.load_safetensors(model.io)
      local inputs = {}
      for i, name in ipairs(model.inputs) do inputs[i] = io_[name] end
      local got = {m(unpack(inputs))}
      assert.equals(#model.outputs, #got)
      for i, name in ipairs(model.outputs) do
         assert.same(io_[name]:shape(), got[i]:shape())
         local diff = (got[i] - io_[name]):abs():max():item()
         assert.is_true(diff <= 1e-5, ('%s, output %s: fastnn and PyTorch differ by %g'):format(model.name, name, diff))
      end
   end
   setup(function()
      local p = io.popen(('python3 %s/spec/onnx_torch_models.py %s 2>/dev/null; echo "exit=$?"'):format(cwd,
                         process.quote(dir)))
      local out = p:read('*a')
      p:close()
      local body, rc = out:match('^(.-)exit=(%d+)%s*$')
      assert(rc == '0', 'spec/onnx_torch_models.py failed:\n' .. out)
      listed = json.decode(body)
   end)

   it('MLPs (Gemm, MatMul and Add, GELU through Erf, SiLU, Flatten, LeakyReLU, ELU, Softmax, LogSoftmax, '
      .. 'LayerNormalization) and convolutional nets (Conv 1-d and 2-d: padded, strided, grouped, dilated; MaxPool, '
      .. 'AveragePool, GlobalAveragePool, BatchNormalization, Resize, ConvTranspose), an embedding (Gather), and transformer '
      .. 'stacks: a two-layer nn.TransformerEncoder and a decoder-only GPT from token ids (Split, causal attention)', function()
      local names = {}
      for _, model in ipairs(listed.models) do
         if not recurrent(model) and not attention(model) then
            check_outputs(model)
            names[#names + 1] = model.name
         end
      end
      -- both of torch's exporters (TorchScript's and torch.export's) are among them
      assert.same({'torch_mlp', 'torch_gelu', 'torch_flatten', 'torch_leaky', 'torch_seq', 'torch_cnn', 'torch_conv1d',
                   'torch_layernorm', 'torch_embedding', 'torch_upsample', 'torch_upconv', 'torch_encoder', 'torch_gpt',
                   'torch_mlp_dynamo'}, names)
   end)

   it('LSTM and GRU (batch first and not, 1 and 2 layers, bidirectional, initial states given and not; and '
      .. 'a hand-written layout = 1 LSTM against onnxruntime) on fastnn\'s fused kernels, sequence and final states', function()
      -- each direction of each layer one call of fnn.lstm / fnn.gru (no time loop in Lua)
      local calls = {}
      local kernels = {lstm = fnn.lstm, gru = fnn.gru}
      for op, f in pairs(kernels) do
         fnn[op] = function(...)
            calls[op] = (calls[op] or 0) + 1
            return f(...)
         end
      end
      local ok, err = pcall(function()
         local names = {}
         for _, model in ipairs(listed.models) do
            if recurrent(model) then
               calls = {}
               check_outputs(model)
               local layers = model.name:find('2layer') and 2 or 1
               local dirs = model.name:find('bidir') and 2 or 1
               assert.same({[model.name:find('lstm') and 'lstm' or 'gru'] = layers * dirs}, calls)
               names[#names + 1] = model.name
            end
         end
         assert.same({'torch_lstm', 'torch_lstm_2layer_state', 'torch_lstm_bidir', 'torch_lstm_bidir_2layer_state',
                      'torch_gru', 'torch_gru_2layer_state', 'torch_gru_bidir', 'torch_gru_bidir_2layer_state',
                      'onnx_lstm_bidir_layout1'}, names)
      end)
      for op, f in pairs(kernels) do fnn[op] = f end
      assert(ok, err)
   end)

   it('attention: nn.MultiheadAttention (with and without biases, causal through an additive mask) and '
      .. 'scaled_dot_product_attention (causal through Trilu, Equal and Where), with torch\'s shape arithmetic', function()
      local names = {}
      for _, model in ipairs(listed.models) do
         if attention(model) then
            check_outputs(model)
            names[#names + 1] = model.name
         end
      end
      assert.same({'torch_mha', 'torch_mha_causal_nobias', 'torch_sdpa', 'torch_sdpa_causal'}, names)
      -- the biases are parameters under PyTorch's names (torch folds the projection weights into
      -- transposed constants of its own names)
      local m = fnn.onnx.load(listed.models[#listed.models - 3].path)
      local params = {}
      for _, pair in ipairs(m:named_parameters()) do params[pair[1]] = pair[2]:tensor():shape() end
      assert.same({24}, params['attn.in_proj_bias'])
      assert.same({8, 8}, params['attn.out_proj.weight'])
   end)

   it('with the parameters under PyTorch\'s names, trainable', function()
      local m = fnn.onnx.load(listed.models[1].path)
      local names = {}
      for _, pair in ipairs(m:named_parameters()) do names[#names + 1] = pair[1] end
      assert.same({'0.weight', '0.bias', '2.weight', '2.bias'}, names)
      local io_ = fnn.load_safetensors(listed.models[1].io)
      m(io_.x):sum():backward()
      assert.same({8, 4}, m:named_parameters()[1][2]:grad():shape())
   end)

   it('keeps BatchNormalization\'s running statistics as buffers, the weights as parameters', function()
      local cnn
      for _, model in ipairs(listed.models) do if model.name == 'torch_cnn' then cnn = model end end
      local m = fnn.onnx.load(cnn.path)
      local buffers, params = {}, {}
      for _, pair in ipairs(m:named_buffers()) do buffers[#buffers + 1] = pair[1] end
      for _, pair in ipairs(m:named_parameters()) do params[#params + 1] = pair[1] end
      assert.same({'5.running_mean', '5.running_var'}, buffers)
      assert.same({'0.weight', '0.bias', '3.weight', '5.weight', '5.bias', '6.weight', '6.bias', '10.weight', '10.bias'},
                  params)
   end)

   it('refuses an operator it does not read by operator and node name, and an LSTM or GRU attribute fastnn '
      .. 'cannot honour (clip, activations, input_forget, linear_before_reset = 0) by name, before running anything', function()
      local attributes = {}
      for _, r in ipairs(listed.refused) do
         local err = support.err_of(function() fnn.onnx.load(r.path) end)
         if r.attribute then   -- an LSTM or GRU whose attribute fastnn's kernels cannot honour
            attributes[#attributes + 1] = r.op .. ' ' .. r.attribute
            assert.matches(("onnx_spec%%.lua:%%d+: onnx%%.load: .*: operator %s %%(node '%s'%%): attribute %s "):format(
                           r.op, r.node, r.attribute), err)
         elseif r.domain == '' then
            assert.matches(("onnx_spec%%.lua:%%d+: onnx%%.load: .*: operator %s %%(node '%s'%%) is not supported; "
                            .. 'fnn%%.onnx%%.load reads .*Gemm'):format(r.op, r.node), err)
         else
            assert.matches(("onnx%%.load: .*: node '%s' is operator %s of domain '%s'"):format(r.node, r.op,
                           r.domain:gsub('%p', '%%%0')), err)
         end
      end
      assert.same({'LSTM clip', 'LSTM activations', 'LSTM input_forget', 'GRU linear_before_reset', 'GRU activations'},
                  attributes)
   end)
end)
