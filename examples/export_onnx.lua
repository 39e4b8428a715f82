-- export_onnx: a model trained here, run elsewhere. An MLP (784-128-10, ReLU) learns MNIST with
-- Adam, then fnn.onnx.export writes it as an ONNX file (opset 17, any batch size) that onnxruntime,
-- TensorRT or a browser runtime can run; a batch of test images and fastnn's logits for it are
-- saved beside it, and the program prints a python3 command that runs the file in onnxruntime
-- and prints how far its logits are from fastnn's. fnn.onnx.load reads the file back, as a check.
--   fastnn-lua examples/export_onnx.lua                  # 3 epochs on all 60000 images
--   fastnn-lua examples/export_onnx.lua --quick          # 3000 images, 2 epochs (CI)
-- MNIST is downloaded once into $FASTNN_DATA (default ~/.cache/fastnn); without a network,
-- Fashion-MNIST from the Debian package dataset-fashion-mnist.
-- Writes under --out (default ./fastnn-out): mnist_mlp.onnx and mnist_mlp_onnx_check.safetensors
-- (input [16, 1, 28, 28] and fastnn's output [16, 10]).
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data
local cli, pictures, datasets = require 'common.cli', require 'common.pictures', require 'common.datasets'
local classify = require 'common.classify'

local opts = cli.parse{
   name = 'export_onnx', about = 'Train an MLP on MNIST, export it to ONNX, and check it in onnxruntime.',
   options = {
      {'dataset', 'mnist', "'mnist' (downloaded; Fashion-MNIST when that fails) or 'fashion'", 'NAME'},
      {'epochs', 3, 'training epochs'},
      {'batch_size', 128, 'images per step'},
      {'lr', 1e-3, 'Adam learning rate'},
      {'train_size', 0, 'use the first N training images (0: all)'},
      {'test_size', 0, 'score on the first N test images (0: all)'},
   },
   quick = {epochs = 2, train_size = 3000, test_size = 1000},
}
fnn.manual_seed(opts.seed)

local train, test, name = datasets.load(opts.dataset)
if opts.train_size > 0 then train = datasets.head(train, opts.train_size) end
if opts.test_size > 0 then test = datasets.head(test, opts.test_size) end

local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
local opt = optim.Adam(model:parameters(), opts.lr)
local loader = data.DataLoader(train, opts.batch_size):shuffle(true):seed(opts.seed)
for epoch = 1, opts.epochs do
   local sum, n = 0, 0
   for batch in loader:iter() do
      opt:zero_grad()
      local loss = nn.cross_entropy(model(batch.inputs), batch.targets)
      loss:backward()
      opt:step()
      sum, n = sum + loss:item() * batch.size, n + batch.size
   end
   print(('epoch %d/%d  train loss %.4f'):format(epoch, opts.epochs, sum / n))
end
print(('test accuracy %.4f on %s (%d images)'):format(classify.evaluate(model, test).accuracy, name, test:len()))

-- the export: traced on one example batch; dynamic_batch frees the batch dimension
model:eval()
local sample = data.DataLoader(test, 16):iter()().inputs
local onnx_path = pictures.wrote(pictures.path(opts, 'mnist_mlp.onnx'))
fnn.onnx.export(model, sample, onnx_path, {dynamic_batch = true})
local check_path = pictures.wrote(pictures.path(opts, 'mnist_mlp_onnx_check.safetensors'))
fnn.save_safetensors({input = sample, output = fnn.no_grad(function() return model(sample) end)}, check_path)

-- and back in, as any ONNX file of these operators comes in (torch.onnx.export's too)
local loaded = fnn.onnx.load(onnx_path)
local back = fnn.no_grad(function() return loaded(sample) end)
print(('read back with fnn.onnx.load: max difference %g'):format(
   (back - fnn.no_grad(function() return model(sample) end)):abs():max():item()))

print('check it in onnxruntime (pip install onnxruntime safetensors):')
print(('python3 -c "import numpy as np, onnxruntime as ort; from safetensors.numpy import load_file; '
       .. "d = load_file('%s'); s = ort.InferenceSession('%s', providers=['CPUExecutionProvider']); "
       .. "print('max difference', float(np.abs(s.run(None, {'input': d['input']})[0] - d['output']).max()))\"")
      :format(check_path, onnx_path))
