-- linear on bfloat16 in C (core/ops/linalg.c's entry and CPU row): a bfloat16 x (and w, b) is widened
-- exactly, the products are the float32 op's (rounded operands under bf16 precision or autocast), and
-- the row rounds its float32 result into a bfloat16 output where precision.lua's rule says so (inside
-- fnn.autocast, or every float input bfloat16). Held BIT FOR BIT to the composition that ran before it,
-- the wrapper's: fnn.linear(x:float(), w, b) on the widened operands, then :bf16() where the rule
-- narrows (autocast's rounded products are set_float32_precision('bf16')'s: one GEMM path), forward
-- and gradients, over shapes, bias, activations, both kernel sets and 1 and 2 threads.
local fnn = require 'fastnn'
local nn = fnn.nn

local KERNELS = require('support').bf16_kernels(after_each)   -- which puts the defaults back after each case

local same = require('support').same_tensor

local MODES = require('support').BF16_MODES

-- x [..., 7] with w [13, 7] (odd sizes, the small GEMM paths), and [3, 50, 67] with w [129, 67]: past
-- 2^18 multiply-adds, oneDNN's matmul primitive (bias, and relu, inside the kernel)
local SHAPES = {{x = {7}, w = {13, 7}}, {x = {5, 7}, w = {13, 7}}, {x = {2, 3, 7}, w = {13, 7}},
                {x = {3, 50, 67}, w = {129, 67}}}

-- out, and the gradients of x, w, b, of loss = sum(out r): native, linear as users call it on the
-- bfloat16 tensors; else the composition (widened operands, the float32 op, :bf16() where it narrows)
local function run(mode, native, x0, w0, b0, act, r)
   local px, pw, pb = nn.Param(x0), nn.Param(w0), b0 and nn.Param(b0)
   local opts = act and {activation = act} or nil
   local out
   local function step()
      local x, w, b = px:tensor(), pw:tensor(), pb and pb:tensor()
      if mode.x then x = native and x:bf16() or x:bf16():float() end
      if mode.wb then
         w = native and w:bf16() or w:bf16():float()
         b = b and (native and b:bf16() or b:bf16():float())
      end
      out = fnn.linear(x, w, b, opts)
      if not native and mode.out == 'bfloat16' then out = out:bf16() end
      ;(out * r):sum():backward()
   end
   require('support').bf16_run(native, mode, step)
   return out, px:grad(), pw:grad(), pb and pb:grad()
end

describe('linear on bfloat16', function()
   for _, mode in ipairs(MODES) do
      for _, kernels in ipairs(KERNELS) do
         for _, threads in ipairs{1, 2} do
            it(('%s, %s kernels, %d thread(s): the composition\'s bits, forward and gradients'):format(
               mode.name, kernels, threads), function()
               fnn.set_kernels(kernels)
               fnn.set_num_threads(threads)
               for si, s in ipairs(SHAPES) do
                  for _, bias in ipairs{true, false} do
                     for _, act in ipairs{false, 'relu', 'gelu'} do
                        fnn.manual_seed(si * 10 + (bias and 1 or 0))
                        local x0, w0 = fnn.randn(table.unpack(s.x)), fnn.randn(table.unpack(s.w)) * 0.3
                        local b0 = bias and fnn.randn(s.w[1]) or nil
                        local oshape = {table.unpack(s.x)}
                        oshape[#oshape] = s.w[1]
                        -- a float32 gradient with more bits than bf16: the backward rounds it itself
                        local r = fnn.randn(table.unpack(oshape))
                        local what = ('x %s, %s, %s'):format(table.concat(s.x, 'x'), bias and 'bias' or 'no bias',
                                                             act or 'no activation')
                        local y, gx, gw, gb = run(mode, true, x0, w0, b0, act or nil, r)
                        local ry, rgx, rgw, rgb = run(mode, false, x0, w0, b0, act or nil, r)
                        assert.equals(mode.out, y:dtype(), what)
                        -- one node, linear's own: no widening or narrowing node around it
                        assert.equals('linear', y:grad_fn(), what)
                        same(y, ry, what .. ': output')
                        same(gx, rgx, what .. ': x gradient')
                        assert.equals('float32', gx:dtype())
                        same(gw, rgw, what .. ': w gradient')
                        if bias then same(gb, rgb, what .. ': b gradient') end
                     end
                  end
               end
            end)
         end
      end
   end

   for _, xtype in ipairs{'bfloat16', 'float32'} do
   it(('rounds the gradient for both backward products under autocast, and sums it unrounded for db (%s x)'):format(
      xtype), function()
      -- independent of the composition (which runs the same rule): products of bf16-rounded operands
      -- summed in doubles, against the float32 sums within 1e-5 of their magnitude. A float32 x is rounded
      -- once by the forward, whose copy dW reads: held to round(x) too
      local round = require('spec.bf16_reference').round
      fnn.manual_seed(12)
      local B, K, N = 9, 7, 13
      local px, pw, pb = nn.Param(fnn.randn(B, K)), nn.Param(fnn.randn(N, K)), nn.Param(fnn.randn(N))
      local r = fnn.randn(B, N)   -- the output's gradient: float32 with more bits than bf16
      fnn.autocast('bf16', function()
         local x = xtype == 'bfloat16' and px:tensor():bf16() or px:tensor()
         local loss = (fnn.linear(x, pw:tensor(), pb:tensor()) * r):sum()
         loss:backward()
      end)
      local X, W, G = px:tensor():bf16():to_flat(), pw:tensor():to_flat(), r:to_flat()
      local dx, dw, db = px:grad():to_flat(), pw:grad():to_flat(), pb:grad():to_flat()
      local function near(got, want, mag, what)
         assert(math.abs(got - want) <= 1e-5 * mag + 1e-30, ('%s: %.9g, want %.9g'):format(what, got, want))
      end
      for i = 0, B - 1 do
         for k = 0, K - 1 do
            local s, m = 0, 0
            for j = 0, N - 1 do
               local t = round(G[i * N + j + 1]) * round(W[j * K + k + 1])
               s, m = s + t, m + math.abs(t)
            end
            near(dx[i * K + k + 1], s, m, 'dx')
         end
      end
      for j = 0, N - 1 do
         local sb, mb = 0, 0
         for i = 0, B - 1 do sb, mb = sb + G[i * N + j + 1], mb + math.abs(G[i * N + j + 1]) end
         near(db[j + 1], sb, mb, 'db')
         for k = 0, K - 1 do
            local s, m = 0, 0
            for i = 0, B - 1 do
               local t = round(G[i * N + j + 1]) * X[i * K + k + 1]
               s, m = s + t, m + math.abs(t)
            end
            near(dw[j * K + k + 1], s, m, 'dw')
         end
      end
   end)   end

   it('keeps the rule for non-contiguous operands: a transposed bf16 x, a bf16 bias at stride 2', function()
      fnn.manual_seed(3)
      local x, w, b = fnn.randn(7, 4):bf16(), fnn.randn(13, 7):bf16(), fnn.randn(13, 2):bf16()
      local y = fnn.linear(x:t(), w, b:select(2, 1))
      assert.equals('bfloat16', y:dtype())
      same(y, fnn.linear(x:t():float(), w:float(), b:select(2, 1):float()):bf16(), 'transposed')
   end)

   it('makes empty outputs and an empty inner dim (bias only, rounded)', function()
      local y = fnn.linear(fnn.zeros(0, 7):bf16(), fnn.randn(13, 7))
      assert.same({0, 13}, y:shape())
      local b = fnn.randn(3)
      y = fnn.linear(fnn.zeros(2, 0):bf16(), fnn.zeros(3, 0):bf16(), b:bf16())
      same(y, fnn.linear(fnn.zeros(2, 0), fnn.zeros(3, 0), b:bf16():float()):bf16(), 'empty inner dim')
   end)

   it('saves x as given: the node holds the bf16 x, not a float32 copy of it', function()
      require('support').holds_bf16_as_given(function(x, w) return fnn.linear(x, w) end, {32, 64})
   end)

   it('passes finite differences on the bf16 path (values exact in bf16, steps of 1/4)', function()
      -- x, w, b multiples of 1/8 in [-1/2, 1/2] and steps of 1/4: every operand and every sum of 7
      -- products is exact in bf16, so the difference quotients are exact and bf16's tolerances hold
      local eighths = require('support').eighths
      fnn.manual_seed(5)
      local inputs = {eighths(2, 3, 7), eighths(13, 7), eighths(13)}
      local opts = {eps = 0.25, atol = 2e-2, rtol = 2e-2}
      local ok, report = fnn.gradcheck(function(x, w, b) return fnn.linear(x:bf16(), w:bf16(), b:bf16()):float() end,
                                       inputs, opts)
      assert(ok, tostring(report))
      ok, report = fnn.gradcheck(function(x, w, b)
         return fnn.autocast('bf16', function() return fnn.linear(x:bf16(), w, b):float() end)
      end, inputs, opts)
      assert(ok, tostring(report))
   end)
end)

describe('nn.Linear and nn.Dense on bfloat16', function()
   it('follow their input: a bf16 x gives bf16 out (float32 parameters), made by linear itself', function()
      fnn.manual_seed(7)
      for _, make in ipairs{function() return nn.Linear(7, 13) end, function() return nn.Dense(13) end} do
         local m = make()
         local x = fnn.randn(4, 7)
         m:forward(x)   -- Dense builds on its first input
         local y = m:forward(x:bf16())
         assert.equals('bfloat16', y:dtype(), tostring(m))
         assert.equals('linear', y:grad_fn(), tostring(m))
         same(y, m:forward(x:bf16():float()):bf16(), tostring(m))
         local z = fnn.autocast('bf16', function() return m:forward(x) end)
         assert.equals('bfloat16', z:dtype(), tostring(m))
         assert.equals('linear', z:grad_fn(), tostring(m))
      end
   end)

   it('inside another layer\'s wrapper (MultiheadAttention under autocast) give float32 to its C ops', function()
      fnn.manual_seed(8)
      local m = nn.MultiheadAttention(8, 2)
      local x = fnn.randn(2, 5, 8)
      local y = fnn.autocast('bf16', function() return m:forward(x) end)
      assert.equals('bfloat16', y:dtype())
   end)
end)

describe('linear under autocast', function()
   it('runs with no float/bf16 conversion node in the forward or the backward (fnn.profile)', function()
      fnn.manual_seed(9)
      local w1, b1, w2, b2 = nn.Param(fnn.randn(32, 16)), nn.Param(fnn.randn(32)), nn.Param(fnn.randn(8, 32)),
                             nn.Param(fnn.randn(8))
      local x, r = fnn.randn(4, 16), fnn.randn(4, 8)
      local report = fnn.profile(function()
         fnn.autocast('bf16', function()
            local h = fnn.linear(x, w1:tensor(), b1:tensor()):relu()   -- float32 x: bf16 out
            local y = fnn.linear(h, w2:tensor(), b2:tensor())           -- bf16 x: bf16 out
            assert.equals('bfloat16', y:dtype())
            ;(y * r):sum():backward()
         end)
      end)
      local all = require('support').ops_without_casts(report)
      assert.is_true(#all > 0)
      assert.matches('linear/forward', all, 1, true)
      assert.equals('float32', w1:grad():dtype())
   end)
end)
