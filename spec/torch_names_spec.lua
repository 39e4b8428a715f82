-- PyTorch's state_dict names on the way in and out (fnn.load_safetensors / save_safetensors with
-- {names = 'torch'}): the fixtures in spec/fixtures/torch were saved by PyTorch
-- (safetensors.torch.save_file; make_fixtures.py made them, its version is in their metadata)
-- and load strictly into the same models built here, giving PyTorch's outputs within 1e-5.
-- The other way, PyTorch reads our {names = 'torch'} files with load_state_dict(strict=True):
-- that part needs python3 with torch; without it the part is left out with a note, unless
-- FASTNN_REQUIRE_TORCH=1 (CI), where its absence fails.
local fnn = require 'fastnn'
local nn = fnn.nn

local FIX = 'spec/fixtures/torch/'
local dir = io.popen('mktemp -d /tmp/fastnn-torch-XXXXXX'):read('*l')
local function file(name) return dir .. '/' .. name end
teardown(function() os.execute('rm -rf ' .. dir) end)

local function sorted(t) table.sort(t); return t end

local function max_diff(a, b)
   assert.same(a:size(), b:size())
   return (a - b):abs():max():item()
end

-- the models as PyTorch's make_fixtures.py builds them (same layer order, same names once
-- Sequential's 1-based children are counted from 0)
local MODELS = {
   mlp = function() return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)) end,
   cnn = function()
      return nn.Sequential(nn.Conv2d(1, 4, 3, {padding = 1}), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                           nn.Flatten(), nn.Linear(4 * 3 * 3, 5))
   end,
   encoder = function() return nn.TransformerEncoderLayer(8, 2, 16, 0.0) end,
   bilstm = function() return nn.LSTM(3, 4, {num_layers = 2, bidirectional = true}) end,
}
local NAMES = {'mlp', 'cnn', 'encoder', 'bilstm'}

describe("load_safetensors {names = 'torch'}", function()
   for _, name in ipairs(NAMES) do
      it('loads PyTorch\'s ' .. name .. ' strictly and gives its outputs within 1e-5', function()
         local m = MODELS[name]()
         local report = fnn.load_safetensors(m, FIX .. name .. '.safetensors', {names = 'torch'})
         assert.same({}, report.missing)
         assert.same({}, report.skipped)
         m:eval()
         local io_ = fnn.load_safetensors(FIX .. name .. '_io.safetensors')
         local y, state = fnn.no_grad(function() return m(io_.input) end)
         assert.is_true(max_diff(y, io_.output) < 1e-5, name .. ': ' .. max_diff(y, io_.output))
         if io_.h_n then   -- a recurrent layer's final states, [2 * num_layers, N, H] in PyTorch's order
            assert.is_true(max_diff(state[1], io_.h_n) < 1e-5, name .. ' h_n')
            assert.is_true(max_diff(state[2], io_.c_n) < 1e-5, name .. ' c_n')
         end
      end)
   end

   it('refuses PyTorch\'s names without it, naming the first mismatch', function()
      local _, err = pcall(function() fnn.load_safetensors(MODELS.mlp(), FIX .. 'mlp.safetensors') end)
      assert.matches('torch_names_spec%.lua:%d+: load_safetensors: .*mlp%.safetensors does not match the model: '
                     .. 'missing 1%.weight, 1%.bias, 3%.weight, 3%.bias; unexpected 0%.bias, 0%.weight, 2%.bias, '
                     .. '2%.weight %(nothing was loaded', err)
   end)

   it('with {strict = false} loads what matches and says what it loaded and skipped', function()
      -- without names = 'torch', 2.* in the file is a ReLU's place here: nothing shifted is loaded
      local m = MODELS.mlp()
      local report = fnn.load_safetensors(m, FIX .. 'mlp.safetensors', {strict = false})
      assert.same({}, report.loaded)
      assert.same({'0.bias', '0.weight', '2.bias', '2.weight'}, sorted(report.skipped))
      assert.same({'1.weight', '1.bias', '3.weight', '3.bias'}, report.missing)
      -- a model with one more layer than the file: the shared ones load, the rest is reported
      local big = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Linear(3, 2))
      report = fnn.load_safetensors(big, FIX .. 'mlp.safetensors', {names = 'torch', strict = false})
      assert.same({'0.bias', '0.weight', '2.bias', '2.weight'}, sorted(report.loaded))
      assert.same({'3.weight', '3.bias'}, report.missing)
      assert.same({}, report.skipped)
   end)

   it('takes a rename map, a table or a function, over the torch names', function()
      local m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
      -- the file's names, shifted by a made-up prefix, as a user's own model might have them
      fnn.save_safetensors(m, file('prefixed.safetensors'), {names = 'torch',
                                                             rename = function(n) return 'net.' .. n end})
      local keys = {}
      for _, t in ipairs(require('fastnn.serialize').info(file('prefixed.safetensors')).tensors) do keys[#keys + 1] = t.name end
      assert.same({'net.0.weight', 'net.0.bias', 'net.2.weight', 'net.2.bias'}, keys)
      local back = MODELS.mlp()
      fnn.load_safetensors(back, file('prefixed.safetensors'), {names = 'torch',
                                                                rename = function(n) return 'net.' .. n end})
      assert.equals(0, max_diff(back[1].weight:tensor(), m[1].weight:tensor()))
      local map = {['0.weight'] = 'net.0.weight', ['0.bias'] = 'net.0.bias', ['2.weight'] = 'net.2.weight',
                   ['2.bias'] = 'net.2.bias'}
      back = MODELS.mlp()
      fnn.load_safetensors(back, file('prefixed.safetensors'), {names = 'torch', rename = map})
      assert.equals(0, max_diff(back[3].bias:tensor(), m[3].bias:tensor()))
      local _, err = pcall(function()
         fnn.save_safetensors(m, file('x.safetensors'), {names = 'torch', rename = function() return 'same' end})
      end)
      assert.matches('save_safetensors: 1%.weight and 1%.bias would both be named same in the file', err)
   end)

   it('refuses an unknown names value and unknown options', function()
      local _, err = pcall(function() fnn.load_safetensors(MODELS.mlp(), FIX .. 'mlp.safetensors', {names = 'pytorch'}) end)
      assert.matches("torch_names_spec%.lua:%d+: fnn%.load_safetensors: names 'pytorch' is not one of 'fastnn', 'torch'", err)
      _, err = pcall(function() fnn.load_safetensors(MODELS.mlp(), FIX .. 'mlp.safetensors', {name = 'torch'}) end)
      assert.matches("fnn%.load_safetensors: unknown option 'name' %(options: names, ", err)
   end)
end)

-- ---------------------------------------------------------------------------
-- PyTorch reads what we write

local function have_torch()
   return os.execute('python3 -c "import torch, safetensors" >/dev/null 2>&1') == 0
end

if not have_torch() and os.getenv('FASTNN_REQUIRE_TORCH') ~= '1' then
   io.stderr:write('torch_names_spec: python3 with torch and safetensors not found: '
                   .. 'the part where PyTorch reads our files is left out\n')
   return
end

describe("save_safetensors {names = 'torch'} read by PyTorch", function()
   it('is possible here (python3 with torch and safetensors)', function()
      assert.is_true(have_torch(), 'python3 -c "import torch, safetensors" failed')
   end)

   it('gives files load_state_dict(strict=True) accepts, with our outputs', function()
      for _, name in ipairs(NAMES) do
         local m = MODELS[name]()
         fnn.load_safetensors(m, FIX .. name .. '.safetensors', {names = 'torch'})   -- the BatchNorm stats
         for _, p in ipairs(m:parameters()) do p:set(p:tensor() * 0.5 + 0.25) end  -- not PyTorch's values
         m:eval()
         local x = fnn.load_safetensors(FIX .. name .. '_io.safetensors').input
         local y = fnn.no_grad(function() return (m(x)) end)
         fnn.save_safetensors(m, file(name .. '.safetensors'), {names = 'torch'})
         fnn.save_safetensors({input = x, output = y}, file(name .. '_io.safetensors'))
      end
      local script = file('read.py')
      local f = assert(io.open(script, 'w'))
      f:write(([[
import sys, torch
from torch import nn
from safetensors.torch import load_file
models = {
    "mlp": lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)),
    "cnn": lambda: nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(4 * 3 * 3, 5)),
    "encoder": lambda: nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True),
    "bilstm": lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True),
}
for name, make in models.items():
    m = make()
    m.load_state_dict(load_file("%s/" + name + ".safetensors"), strict=True)
    m.eval()
    io = load_file("%s/" + name + "_io.safetensors")
    with torch.no_grad():
        y = m(io["input"])
        if isinstance(y, tuple):
            y = y[0]
        d = (y - io["output"]).abs().max().item()
    print(name, d)
]]):format(dir, dir))
      f:close()
      local p = io.popen('python3 ' .. script .. ' 2>&1; echo "exit=$?"')
      local out = p:read('*a')
      p:close()
      assert.matches('exit=0', out, out)
      for _, name in ipairs(NAMES) do
         local d = tonumber(out:match(name .. ' (%S+)'))
         assert.is_true(d ~= nil and d < 1e-5, name .. ': ' .. out)
      end
   end)
end)
