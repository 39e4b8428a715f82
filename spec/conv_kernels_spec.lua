-- The CPU convolutions under the two kernel sets (core/blas.c's fnn_set_kernels): 'onednn' runs
-- them on oneDNN's convolution primitives (core/ops/conv_onednn.c), 'portable' on im2col + sgemm
-- (core/ops/conv.c) and the direct depthwise kernels. conv1d/2d/3d and conv_transpose1d/2d/3d,
-- forward values and the gradients of x, w and b through autograd, on odd shapes, strides,
-- groups, dilations, per-side padding, depthwise, batch 1 and unbatched: the two kernel sets
-- must agree (1e-4 relative). Weight gradients must come out bit for bit the same run to run.
-- In a build without oneDNN (-DFASTNN_ONEDNN=OFF), 'onednn' must be refused, naming the option.
local fnn = require 'fastnn'
local support = require 'support'

local has_onednn = fnn.config and (fnn.config().onednn or ''):match('^%d') ~= nil
if fnn.config == nil then has_onednn = pcall(fnn.set_kernels, 'onednn') end

local function with_kernels(name, f)
   local saved = fnn.get_kernels()
   fnn.set_kernels(name)
   local ok, a, b = pcall(f)
   fnn.set_kernels(saved)
   if not ok then error(a, 0) end
   return a, b
end

-- y, loss = sum(y * gy); loss:backward(); the values of y and of the gradients as flat arrays
local function run(op, cfg)
   fnn.manual_seed(cfg.seed or 7)
   local x, w = fnn.randn(cfg.x), fnn.randn(cfg.w)
   local nb = op:match('transpose') and cfg.w[2] * (cfg.opts.groups or 1) or cfg.w[1]
   local b = cfg.bias ~= false and fnn.randn({nb}) or nil
   local px, pw = fnn.Param(x), fnn.Param(w)
   local pb = b and fnn.Param(b) or nil
   local y = fnn[op](px:tensor(), pw:tensor(), pb and pb:tensor() or nil, cfg.opts)
   local gy = fnn.randn(y:shape())
   local loss = (y * gy):sum()
   loss:backward()
   return {y = y:to_flat(), dx = px:grad():to_flat(), dw = pw:grad():to_flat(),
           db = pb and pb:grad():to_flat() or nil, shape = y:shape()}
end

local function same_bits(a, b, what)
   assert.equals(#a, #b)
   for i = 1, #a do
      if a[i] ~= b[i] then error(('%s element %d differs run to run: %.9g vs %.9g'):format(what, i, a[i], b[i])) end
   end
end

local cases = {
   conv1d = {
      {name = 'odd length, bias', x = {2, 3, 11}, w = {4, 3, 3}, opts = {}},
      {name = 'stride 2, per-side padding (3, 0)', x = {3, 2, 10}, w = {5, 2, 4}, opts = {stride = 2, padding = {{3, 0}}}},
      {name = 'dilation 3, stride 3, floor drops the tail', x = {1, 2, 18}, w = {3, 2, 3},
       opts = {dilation = 3, stride = 3}},
      {name = 'groups 2, no bias', x = {2, 4, 9}, w = {6, 2, 3}, opts = {groups = 2, padding = {2}}, bias = false},
      {name = 'depthwise, multiplier 2', x = {2, 4, 13}, w = {8, 1, 5}, opts = {groups = 4, padding = 2}},
      {name = 'pointwise', x = {3, 4, 7}, w = {5, 4, 1}, opts = {}},
      {name = 'unbatched', x = {3, 12}, w = {2, 3, 3}, opts = {padding = 1}},
      {name = 'batch split over threads', x = {8, 8, 64}, w = {8, 8, 5}, opts = {padding = 2}},
   },
   conv2d = {
      {name = 'odd sizes, stride (2, 1), padding (1, 2)', x = {2, 3, 9, 7}, w = {4, 3, 3, 2},
       opts = {stride = {2, 1}, padding = {1, 2}}},
      {name = 'per-side padding, dilation (2, 3)', x = {2, 2, 11, 10}, w = {3, 2, 3, 3},
       opts = {dilation = {2, 3}, padding = {{1, 0}, {2, 3}}}},
      {name = 'groups 3, stride 2 with a dropped tail', x = {1, 6, 12, 9}, w = {9, 2, 3, 3},
       opts = {groups = 3, stride = 2}},
      {name = 'depthwise 3x3, stride 2, padding 1', x = {2, 8, 15, 15}, w = {8, 1, 3, 3},
       opts = {groups = 8, stride = 2, padding = 1}},
      {name = 'depthwise 5x5 dilation 2', x = {1, 4, 14, 13}, w = {4, 1, 5, 5},
       opts = {groups = 4, padding = 4, dilation = 2}},
      {name = 'batch 1, no bias, 1x1', x = {1, 16, 7, 5}, w = {8, 16, 1, 1}, opts = {}, bias = false},
      {name = 'unbatched 3x3 same', x = {3, 8, 8}, w = {5, 3, 3, 3}, opts = {padding = 'same'}},
      {name = 'a small CNN layer', x = {8, 16, 14, 14}, w = {32, 16, 3, 3}, opts = {padding = 1}},
   },
   conv3d = {
      {name = 'odd sizes', x = {2, 2, 5, 6, 7}, w = {3, 2, 3, 2, 3}, opts = {}},
      {name = 'stride (1, 2, 2), padding (1, 0, 2)', x = {1, 3, 6, 9, 8}, w = {4, 3, 3, 3, 3},
       opts = {stride = {1, 2, 2}, padding = {1, 0, 2}}},
      {name = 'groups 2, dilation 2, per-side padding', x = {2, 4, 7, 6, 6}, w = {4, 2, 2, 3, 2},
       opts = {groups = 2, dilation = 2, padding = {{1, 0}, {0, 2}, 1}}},
      {name = 'depthwise', x = {2, 3, 5, 5, 5}, w = {3, 1, 3, 3, 3}, opts = {groups = 3, padding = 1}},
      {name = 'unbatched', x = {2, 4, 5, 6}, w = {3, 2, 2, 2, 2}, opts = {stride = 2}},
   },
   conv_transpose1d = {
      {name = 'stride 2, output_padding 1', x = {2, 3, 9}, w = {3, 4, 3}, opts = {stride = 2, output_padding = 1}},
      {name = 'groups 2, dilation 2, padding 2', x = {1, 4, 10}, w = {4, 3, 3},
       opts = {groups = 2, dilation = 2, padding = 2}},
      {name = 'depthwise, unbatched', x = {4, 11}, w = {4, 1, 4}, opts = {groups = 4, stride = 3}},
   },
   conv_transpose2d = {
      {name = 'stride 2, padding 1, output_padding 1', x = {2, 4, 7, 6}, w = {4, 3, 3, 3},
       opts = {stride = 2, padding = 1, output_padding = 1}},
      {name = 'groups 2, stride (1, 3), dilation (2, 1), no bias', x = {1, 4, 5, 6}, w = {4, 2, 3, 2},
       opts = {groups = 2, stride = {1, 3}, dilation = {2, 1}}, bias = false},
      {name = 'depthwise 4x4 stride 2 (an upsampler)', x = {2, 6, 8, 8}, w = {6, 1, 4, 4},
       opts = {groups = 6, stride = 2, padding = 1}},
      {name = 'unbatched, per-side padding', x = {3, 6, 5}, w = {3, 2, 3, 3}, opts = {padding = {{2, 0}, {1, 2}}}},
   },
   conv_transpose3d = {
      {name = 'stride 2, output_padding (1, 0, 1)', x = {1, 3, 4, 5, 3}, w = {3, 2, 3, 2, 3},
       opts = {stride = 2, output_padding = {1, 0, 1}}},
      {name = 'groups 3, padding 1', x = {2, 3, 4, 4, 4}, w = {3, 2, 3, 3, 3}, opts = {groups = 3, padding = 1}},
   },
}

local ops = {'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d'}

describe('the CPU convolutions under the two kernel sets', function()
   it('reports the kernels it runs', function()
      assert.is_true(fnn.get_kernels() == 'onednn' or fnn.get_kernels() == 'portable')
   end)

   if not has_onednn then
      it("refuses set_kernels('onednn') in a build without oneDNN, naming the build option", function()
         local ok, err = pcall(fnn.set_kernels, 'onednn')
         assert.is_false(ok)
         assert.matches('FASTNN_ONEDNN=OFF', err, 1, true)
         assert.equals('portable', fnn.get_kernels())
      end)
      for _, op in ipairs(ops) do
         for _, cfg in ipairs(cases[op]) do
            it(op .. ' runs on the portable kernels: ' .. cfg.name, function()
               local r = run(op, cfg)
               assert.is_true(#r.y > 0 and #r.dx > 0 and #r.dw > 0)
            end)
         end
      end
      return
   end

   for _, op in ipairs(ops) do
      for _, cfg in ipairs(cases[op]) do
         it(op .. ': oneDNN matches the portable kernels, values and gradients: ' .. cfg.name, function()
            local a = with_kernels('onednn', function() return run(op, cfg) end)
            local p = with_kernels('portable', function() return run(op, cfg) end)
            assert.same(p.shape, a.shape)
            support.approx(p.y, a.y, 1e-4)
            support.approx(p.dx, a.dx, 1e-4)
            support.approx(p.dw, a.dw, 1e-4)
            if p.db then support.approx(p.db, a.db, 1e-4) end
         end)
      end
   end

   it('gives the same weight and bias gradients run to run under oneDNN (2 threads and 1)', function()
      local saved = fnn.get_num_threads()
      local ok, err = pcall(function()
         for _, t in ipairs({saved, 1}) do
            fnn.set_num_threads(t)
            for _, c in ipairs({{'conv2d', cases.conv2d[8]}, {'conv3d', cases.conv3d[3]},
                                {'conv_transpose2d', cases.conv_transpose2d[1]}, {'conv1d', cases.conv1d[8]}}) do
               local r1 = with_kernels('onednn', function() return run(c[1], c[2]) end)
               local r2 = with_kernels('onednn', function() return run(c[1], c[2]) end)
               same_bits(r1.dw, r2.dw, c[1] .. ' dw')
               same_bits(r1.db, r2.db, c[1] .. ' db')
               same_bits(r1.dx, r2.dx, c[1] .. ' dx')
            end
         end
      end)
      fnn.set_num_threads(saved)
      assert(ok, err)
   end)

   -- resnet_small's kinds of layer with odd channel counts (not multiples of the 8-channel blocks)
   -- and batches 3 (split 1 + 2 over two threads) and 1: the backward with both gradients reuses
   -- diff_dst's blocked copy (conv_onednn.c), with one of them it reorders its own
   local resnet_like = {
      {name = '3x3 pad 1, 12 -> 20, batch 3', x = {3, 12, 24, 24}, w = {20, 12, 3, 3}, opts = {padding = 1}},
      {name = '3x3 stride 2 pad 1, 12 -> 20, batch 3', x = {3, 12, 40, 40}, w = {20, 12, 3, 3},
       opts = {stride = 2, padding = 1}},
      {name = '1x1 stride 2, 13 -> 24, batch 3', x = {3, 13, 48, 48}, w = {24, 13, 1, 1}, opts = {stride = 2}},
      {name = '3x3 pad 1, 5 -> 11, batch 1', x = {1, 5, 30, 30}, w = {11, 5, 3, 3}, opts = {padding = 1}},
      -- 1, 2 and 4 input channels: oneDNN's weight gradient would pad them to a channel block, so
      -- im2col runs the backward; 3 channels get oneDNN's unpadded kernel (conv_onednn.c)
      {name = '3x3 pad 1, 1 -> 16, batch 4 (cnn_fmnist\'s first layer)', x = {4, 1, 20, 20}, w = {16, 1, 3, 3},
       opts = {padding = 1}},
      {name = '3x3 pad 1, 2 -> 8, batch 3', x = {3, 2, 17, 17}, w = {8, 2, 3, 3}, opts = {padding = 1}},
      {name = '3x3 stride 2 pad 1, 4 -> 8, batch 3', x = {3, 4, 19, 19}, w = {8, 4, 3, 3}, opts = {stride = 2, padding = 1}},
      {name = '3x3 pad 1, 3 -> 16, batch 3 (resnet_small\'s stem)', x = {3, 3, 16, 16}, w = {16, 3, 3, 3},
       opts = {padding = 1}},
   }
   -- the gradients wanted: x and w (the shared copy), x alone (w frozen), w alone (x plain data)
   local function run_wanting(cfg, want_x, want_w)
      fnn.manual_seed(11)
      local x, w = fnn.randn(cfg.x), fnn.randn(cfg.w)
      local px, pw = want_x and fnn.Param(x) or nil, want_w and fnn.Param(w) or nil
      local y = fnn.conv2d(px and px:tensor() or x, pw and pw:tensor() or w, nil, cfg.opts)
      local gy = fnn.randn(y:shape())
      ;(y * gy):sum():backward()
      return {y = y:to_flat(), dx = px and px:grad():to_flat(), dw = pw and pw:grad():to_flat()}
   end
   it('matches the portable kernels on resnet-shaped layers with odd channels, each gradient alone or both, '
      .. '2 threads and 1', function()
      local saved = fnn.get_num_threads()
      local ok, err = pcall(function()
         for _, t in ipairs({2, 1}) do
            fnn.set_num_threads(t)
            for _, cfg in ipairs(resnet_like) do
               for _, want in ipairs({{true, true}, {true, false}, {false, true}}) do
                  local a = with_kernels('onednn', function() return run_wanting(cfg, want[1], want[2]) end)
                  local p = with_kernels('portable', function() return run_wanting(cfg, want[1], want[2]) end)
                  support.approx(p.y, a.y, 1e-4)
                  if want[1] then support.approx(p.dx, a.dx, 1e-4) else assert.is_nil(a.dx) end
                  if want[2] then support.approx(p.dw, a.dw, 1e-4) else assert.is_nil(a.dw) end
                  -- both wanted or one alone: the same bits for the gradient they share
                  local both = with_kernels('onednn', function() return run_wanting(cfg, true, true) end)
                  if want[1] then same_bits(both.dx, a.dx, cfg.name .. ' dx') end
                  if want[2] then same_bits(both.dw, a.dw, cfg.name .. ' dw') end
               end
            end
         end
      end)
      fnn.set_num_threads(saved)
      assert(ok, err)
   end)

   -- the forward keeps x's blocked copy for the weight gradient (conv_onednn.c); with the threads
   -- changed between forward and backward the batch split differs and the backward reorders x itself
   it('gives the portable gradients with the threads changed between forward and backward', function()
      local saved = fnn.get_num_threads()
      local ok, err = pcall(function()
         for _, tt in ipairs({{2, 1}, {1, 2}}) do
            for _, cfg in ipairs(resnet_like) do
               local r = {}
               for _, k in ipairs({'onednn', 'portable'}) do
                  r[k] = with_kernels(k, function()
                     fnn.set_num_threads(tt[1])
                     fnn.manual_seed(5)
                     local px, pw = fnn.Param(fnn.randn(cfg.x)), fnn.Param(fnn.randn(cfg.w))
                     local y = fnn.conv2d(px:tensor(), pw:tensor(), nil, cfg.opts)
                     local loss = (y * fnn.randn(y:shape())):sum()
                     fnn.set_num_threads(tt[2])
                     loss:backward()
                     return {dx = px:grad():to_flat(), dw = pw:grad():to_flat()}
                  end)
               end
               support.approx(r.portable.dx, r.onednn.dx, 1e-4)
               support.approx(r.portable.dw, r.onednn.dw, 1e-4)
            end
         end
      end)
      fnn.set_num_threads(saved)
      assert(ok, err)
   end)

   it('runs the bias gradient alone (the weight frozen) and the input gradient alone', function()
      local cfg = cases.conv2d[1]
      for _, k in ipairs({'onednn', 'portable'}) do
         with_kernels(k, function()
            fnn.manual_seed(3)
            local x, w, b = fnn.randn(cfg.x), fnn.randn(cfg.w), fnn.Param(fnn.randn({cfg.w[1]}))
            local y = fnn.conv2d(x, w, b:tensor(), cfg.opts)
            y:sum():backward()
            local db = b:grad():to_flat()
            local n = 1
            for i = 3, #y:shape() do n = n * y:shape()[i] end
            support.approx({n * cfg.x[1], n * cfg.x[1], n * cfg.x[1], n * cfg.x[1]}, db, 1e-5)
         end)
      end
   end)
end)
