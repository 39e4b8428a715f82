-- bfloat16 tensors (core/ops/to_dtype.c, lua/fastnn/precision.lua) and fnn.autocast: the dtype's
-- storage, conversions and rounding against an independent reference (spec/bf16_reference.lua);
-- every op on bf16 inputs against the float32 op on the same values; autograd through bf16 (the
-- gradient of a bf16 tensor is float32); autocast's op lists, regions and layers; checkpoints.
local fnn = require 'fastnn'
local nn = fnn.nn
local ref = require 'spec.bf16_reference'
local serialize = require 'fastnn.serialize'

local dir = io.popen('mktemp -d /tmp/fastnn-bf16-XXXXXX'):read('*l')
teardown(function() os.execute('rm -rf ' .. dir) end)

local function ids(t) return fnn.tensor(t, {dtype = 'int64'}) end

local function err_of(f)
   local ok, e = pcall(f)
   assert.is_false(ok, 'expected an error')
   return tostring(e)
end

-- every element of got (any float dtype) equals want's rounded to bf16, bit for bit
local function assert_rounded_equal(got, want, what)
   assert.same(want:shape(), got:shape(), what)
   local g, w = got:float():to_flat(), want:to_flat()
   for i = 1, #w do
      local r = ref.round(w[i])
      assert(g[i] == r or (g[i] ~= g[i] and r ~= r),
             ('%s: element %d is %.9g, the rounded float32 result is %.9g'):format(what or '', i, g[i], r))
   end
end

describe('the bfloat16 dtype', function()
   it('converts with round to nearest, ties to even, bit for bit, keeping NaN and Inf', function()
      local ulp = 2 ^ -7
      local values = {1 + ulp / 2, 1 + 3 * ulp / 2, -(1 + 3 * ulp / 2), 0.1, -2.5e-3, 65504, 1e30, 3.4e38,
                      1 / 0, -1 / 0, 0, 1e-40}
      local f32 = fnn.tensor(values)
      local b = f32:bf16()
      assert.equals('bfloat16', b:dtype())
      local got = b:to_flat()
      for i, v in ipairs(f32:to_flat()) do assert.equals(ref.round(v), got[i]) end
      assert.equals(1, got[1])
      assert.equals(1 + 2 * ulp, got[2])
      assert.equals(math.huge, got[8])    -- past bf16's largest finite
      local nan = fnn.tensor{0 / 0}:bf16():item()
      assert.is_true(nan ~= nan)
      -- many values over many magnitudes
      fnn.manual_seed(4)
      local x = fnn.randn(5000) * fnn.exp(fnn.randn(5000) * 10)
      assert_rounded_equal(x:bf16(), x, 'randn')
   end)

   it('takes 2 bytes an element, and widens back to float32 exactly', function()
      local x = fnn.randn(1000, 1000)
      local before = fnn.live_bytes()
      local b = x:bf16()
      local grew = fnn.live_bytes() - before
      assert.is_true(grew >= 2e6 and grew < 2.1e6, 'a 1e6-element bf16 tensor took ' .. grew .. ' bytes')
      local back = b:float()
      assert.equals('float32', back:dtype())
      assert.equals(0, (back:bf16():float() - back):abs():max():item())
      b:free()
   end)

   it('is made by the creators and fnn.tensor with {dtype = "bfloat16"} (or "bf16"), and prints as such', function()
      for _, z in ipairs{fnn.zeros(2, 3, {dtype = 'bfloat16'}), fnn.ones(2, 3, {dtype = 'bf16'}),
                         fnn.full({2, 3}, 1.1, {dtype = 'bfloat16'}), fnn.empty(2, 3, {dtype = 'bf16'})} do
         assert.equals('bfloat16', z:dtype())
         assert.same({2, 3}, z:shape())
      end
      assert.equals(ref.round(1.1), fnn.full({2}, 1.1, {dtype = 'bfloat16'}):to_flat()[2])
      local t = fnn.tensor({{1.1, 2.2}, {-3.3, 4.4}}, {dtype = 'bfloat16'})
      assert.equals('bfloat16', t:dtype())
      assert.same({{ref.round(1.1), ref.round(2.2)}, {ref.round(-3.3), ref.round(4.4)}}, t:to_table())
      assert.equals(ref.round(-3.3), t:select(1, 2):select(1, 1):item())
      assert.matches('bfloat16', tostring(t))
      assert.matches('1.1016', tostring(t))
      assert.equals('bfloat16', fnn.zeros_like(t):dtype())
      assert.equals('float32', fnn.tensor(t, {dtype = 'float32'}):dtype())
      assert.same({1, -3}, fnn.tensor{1, -3}:bf16():long():to_table())
      assert.matches('not a whole number', err_of(function() return fnn.tensor{1.5}:bf16():long() end))
   end)

   it('views share the storage and read through strides; copies keep the dtype', function()
      local x = fnn.randn(8, 12)   -- past the 64 bytes a tensor keeps inline
      local b = x:bf16()
      local v = b:transpose(1, 2)
      assert.equals(b:storage_id(), v:storage_id())
      assert.equals('bfloat16', v:dtype())
      assert_rounded_equal(v:contiguous(), x:transpose(1, 2), 'transpose')
      assert_rounded_equal(b:narrow(2, 2, 3), x:narrow(2, 2, 3), 'narrow')
      assert_rounded_equal(b:select(1, 3), x:select(1, 3), 'select')
      assert_rounded_equal(b:reshape(6, 16), x:reshape(6, 16), 'reshape')
      assert_rounded_equal(b:t():reshape(96), x:t():reshape(96), 'reshape of a transposed view')
      local c = fnn.cat({b, b:narrow(1, 1, 2)}, 1)
      assert.equals('bfloat16', c:dtype())
      assert_rounded_equal(c, fnn.cat({x, x:narrow(1, 1, 2)}, 1), 'cat')
      local s = fnn.stack({b, b}, 2)
      assert.equals('bfloat16', s:dtype())
      assert_rounded_equal(s, fnn.stack({x, x}, 2), 'stack')
      assert_rounded_equal(b:index_select(1, ids{3, 1}), x:index_select(1, ids{3, 1}), 'index_select')
   end)
end)

describe('every op on bfloat16 inputs', function()
   -- pad, pad_mode and repeat's rows move 4- and 8-byte elements: their C entries refuse bf16 by name
   -- (they wrote it as floats past the output's end); the Lua ops widen first, so users get bf16 back
   it('pads and repeats bf16 through the Lua ops, and the C entries refuse it rather than overrun', function()
      local ffi = require 'ffi'
      local C = require('fastnn.tensor').C
      local x = fnn.arange(1, 13):reshape(3, 4):bf16()
      local pads = ffi.new('int64_t[2]', {2, 2})
      local reps = ffi.new('int64_t[2]', {2, 3})
      local calls = {
         function(out) return C.fnn_pad(out, x, 1, pads, 0) end,
         function(out) return C.fnn_pad_mode(out, x, 1, pads, 1) end,
         function(out) return C.fnn_repeat(out, x, 2, reps) end,
      }
      for i, call in ipairs(calls) do
         local out = ffi.new('fnn_tensor')
         C.fnn_tensor_init(out)
         assert.are_not.equal(0, call(out))
         local e = require('fastnn.tensor').last_error()
         assert.matches((i == 3 and 'repeat' or 'pad') .. ': takes float32 or int64, got a bfloat16 tensor %[3,4%]', e)
      end
      local reflect = fnn.pad(x, {1, 1}, {mode = 'reflect'})
      assert.equals('bfloat16', reflect:dtype())
      assert.same(fnn.pad(x:float(), {1, 1}, {mode = 'reflect'}):to_table(), reflect:float():to_table())
      assert.same(fnn['repeat'](x:float(), {2, 1}):to_table(), fnn['repeat'](x, {2, 1}):float():to_table())
   end)

   -- each case: a name, the op, and inputs (float32; the case runs them as bf16)
   local pos = function(...) return fnn.rand(...) + 0.5 end
   local CASES = {
      {'abs', function(x) return x:abs() end, {fnn.randn(5, 7)}},
      {'exp', function(x) return x:exp() end, {fnn.randn(5, 7)}},
      {'log', function(x) return x:log() end, {pos(5, 7)}},
      {'sqrt', function(x) return x:sqrt() end, {pos(5, 7)}},
      {'sigmoid', function(x) return x:sigmoid() end, {fnn.randn(5, 7)}},
      {'tanh', function(x) return x:tanh() end, {fnn.randn(5, 7)}},
      {'relu', function(x) return x:relu() end, {fnn.randn(5, 7)}},
      {'gelu', function(x) return x:gelu() end, {fnn.randn(5, 7)}},
      {'silu', function(x) return x:silu() end, {fnn.randn(5, 7)}},
      {'softplus', function(x) return x:softplus() end, {fnn.randn(5, 7)}},
      {'neg (operator)', function(x) return -x end, {fnn.randn(5, 7)}},
      {'clamp', function(x) return x:clamp(-0.5, 0.5) end, {fnn.randn(5, 7)}},
      {'add (operator)', function(a, b) return a + b end, {fnn.randn(5, 7), fnn.randn(7)}},
      {'sub', function(a, b) return a:sub(b) end, {fnn.randn(5, 7), fnn.randn(5, 1)}},
      {'mul', function(a, b) return a * b end, {fnn.randn(5, 7), fnn.randn(5, 7)}},
      {'div', function(a, b) return a / b end, {fnn.randn(5, 7), pos(5, 7)}},
      {'pow', function(a, b) return a:pow(b) end, {pos(5, 7), fnn.randn(5, 7)}},
      {'maximum', function(a, b) return a:maximum(b) end, {fnn.randn(5, 7), fnn.randn(5, 7)}},
      {'times a number', function(x) return x * 3 end, {fnn.randn(5, 7)}},
      {'a number minus', function(x) return 1 - x end, {fnn.randn(5, 7)}},
      {'where', function(c, a, b) return fnn.where(c, a, b) end, {fnn.randn(5, 7):gt(0):float(), fnn.randn(5, 7),
                                                                 fnn.randn(5, 7)}},
      {'sum', function(x) return x:sum(2) end, {fnn.randn(5, 300)}},
      {'mean', function(x) return x:mean() end, {fnn.randn(5, 300)}},
      {'var', function(x) return x:var(1) end, {fnn.randn(50, 7)}},
      {'std', function(x) return x:std() end, {fnn.randn(50, 7)}},
      {'logsumexp', function(x) return x:logsumexp(2) end, {fnn.randn(5, 7)}},
      {'prod', function(x) return x:prod(2) end, {fnn.randn(5, 7)}},
      {'norm', function(x) return x:norm() end, {fnn.randn(5, 7)}},
      {'max with a dim', function(x) return (x:max(2)) end, {fnn.randn(5, 7)}},
      {'softmax', function(x) return x:softmax(2) end, {fnn.randn(5, 7)}},
      {'log_softmax', function(x) return x:log_softmax() end, {fnn.randn(5, 7)}},
      {'cumsum', function(x) return x:cumsum(2) end, {fnn.randn(5, 7)}},
      {'matmul', function(a, b) return a:matmul(b) end, {fnn.randn(9, 33), fnn.randn(33, 5)}},
      {'linear', function(x, w, b) return fnn.linear(x, w, b) end, {fnn.randn(6, 20), fnn.randn(4, 20), fnn.randn(4)}},
      {'bmm', function(a, b) return fnn.bmm(a, b) end, {fnn.randn(2, 4, 8), fnn.randn(2, 8, 3)}},
      {'conv2d', function(x, w) return fnn.conv2d(x, w, nil, {padding = 1}) end,
       {fnn.randn(2, 3, 6, 6), fnn.randn(4, 3, 3, 3)}},
      {'max_pool2d', function(x) return fnn.max_pool2d(x, 2) end, {fnn.randn(2, 3, 6, 6)}},
      {'layer_norm', function(x) return fnn.layer_norm(x) end, {fnn.randn(4, 16)}},
      {'attention', function(q, k, v) return fnn.attention(q, k, v, {causal = true}) end,
       {fnn.randn(1, 2, 5, 4), fnn.randn(1, 2, 5, 4), fnn.randn(1, 2, 5, 4)}},
      {'mse', function(a, b) return nn.mse(a, b) end, {fnn.randn(5, 7), fnn.randn(5, 7)}},
      {'pad', function(x) return x:pad({1, 2}) end, {fnn.randn(3, 4)}},
      {'tril', function(x) return x:tril() end, {fnn.randn(4, 4)}},
      {'repeat', function(x) return x['repeat'](x, 2, 1) end, {fnn.randn(2, 3)}},
   }
   for _, case in ipairs(CASES) do
      it(case[1] .. ': the float32 op on the same values, rounded to bf16, and a bf16 result', function()
         local b = {}
         for i, x in ipairs(case[3]) do b[i] = x:bf16() end
         local same = {}
         for i, x in ipairs(b) do same[i] = x:float() end
         local got, want = case[2](table.unpack(b)), case[2](table.unpack(same))
         assert.equals('bfloat16', got:dtype())
         assert_rounded_equal(got, want, case[1])
      end)
   end

   it('gives float32 beside a float32 operand (PyTorch\'s promotion), float32 masks and int64 indices', function()
      local a, b = fnn.randn(3, 4), fnn.randn(3, 4)
      assert.equals('float32', (a:bf16() + b):dtype())
      assert.equals('float32', (a + b:bf16()):dtype())
      assert.equals('float32', a:bf16():gt(b:bf16()):dtype())
      local values, indices = a:bf16():sort(2)
      assert.equals('bfloat16', values:dtype())
      assert.equals('int64', indices:dtype())
      assert.same(select(2, a:bf16():float():sort(2)):to_table(), indices:to_table())
      assert.equals('int64', a:bf16():argmax(2):dtype())
   end)

   -- elementwise.c's tiled pass (contiguous operands of one shape; tiles of 1024) and its general path
   -- (broadcast, strided) against the float32 op on the same values, past a tile's end, at 1 and 2 threads
   it('runs the elementwise family on bf16 in tiles: the float32 op\'s numbers, any size, any thread count',
      function()
      local threads = fnn.get_num_threads()
      fnn.manual_seed(12)
      local a, b, c = fnn.randn(3, 2049), fnn.randn(3, 2049), fnn.randn(2049)
      local ab, bb = a:bf16(), b:bf16()
      local af, bf = ab:float(), bb:float()
      for _, n in ipairs{1, 2} do
         fnn.set_num_threads(n)
         assert_rounded_equal(ab + bb, af + bf, 'add, tiled')
         assert_rounded_equal(ab * bb, af * bf, 'mul, tiled')
         assert_rounded_equal(ab:relu(), af:relu(), 'relu, tiled')
         assert_rounded_equal(ab:gelu(), af:gelu(), 'gelu, tiled')
         assert_rounded_equal(ab + c:bf16(), af + c:bf16():float(), 'add, broadcast')
         assert_rounded_equal(ab:t():exp(), af:t():exp(), 'exp, strided')
         local mixed = ab * b                                   -- bf16 with float32: float32, unrounded
         assert.equals('float32', mixed:dtype())
         assert.equals(0, (mixed - af * b):abs():max():item())
         local mask = ab:gt(bb)
         assert.equals('float32', mask:dtype())
         assert.equals(0, (mask - af:gt(bf)):abs():max():item())
      end
      fnn.set_num_threads(threads)
   end)

   it('raises an op\'s refusal at the caller\'s line, naming the op and the shapes', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local e = err_of(function() local y = fnn.randn(2, 3):bf16():matmul(fnn.randn(4, 5):bf16()); return y end)
      assert.matches('bf16_spec.lua:' .. line .. ': matmul: shapes [2,3] and [4,5]', e, 1, true)
   end)

   it('pools bfloat16 in C on the CPU: no conversion nodes, errors at the caller\'s line, layers too', function()
      fnn.manual_seed(8)
      local x = fnn.Param(fnn.randn(2, 3, 7, 9)):tensor():bf16()   -- in a graph: the result's node shows
      for _, op in ipairs{'max_pool2d', 'avg_pool2d'} do
         local y = fnn.autocast('bf16', function() return fnn[op](x, 2) end)
         assert.equals('bfloat16', y:dtype())
         assert.equals(op, y:grad_fn())   -- the pool itself made it (the widening path ends in a bf16 node)
         assert_rounded_equal(y, fnn[op](x:float(), 2), op)
      end
      local m = nn.MaxPool2d(3, {stride = 2, padding = 1})
      local y = m:forward(x)
      assert.equals('bfloat16', y:dtype())
      assert_rounded_equal(y, m:forward(x:float()), 'nn.MaxPool2d')
      local line = debug.getinfo(1, 'l').currentline + 1
      local e = err_of(function() local z = fnn.max_pool2d(x, 0); return z end)
      assert.matches('bf16_spec.lua:' .. line .. ': max_pool2d: kernel 0x0 must be positive', e, 1, true)
   end)

   it('runs nn.Flatten and nn.Identity on bf16 as they are: a view and the input, no cast nodes, float32 gradients',
      function()
      fnn.manual_seed(9)
      local p = fnn.Param(fnn.randn(3, 7, 5))
      local x = p:tensor():bf16()
      local y = fnn.autocast('bf16', function() return nn.Flatten():forward(x) end)
      assert.equals('bfloat16', y:dtype())
      assert.equals('reshape', y:grad_fn())   -- a view of x (the widened path ended in a narrowing node)
      assert.same({3, 35}, y:shape())
      assert_rounded_equal(y, nn.Flatten():forward(x:float()), 'nn.Flatten')
      assert.is_true(rawequal(x, fnn.autocast('bf16', function() return nn.Identity():forward(x) end)))
      local w = fnn.randn(3, 35)
      local l = (y:float() * w):sum()
      l:backward()
      assert.equals('float32', p:grad():dtype())
      assert.equals(0, (p:grad() - w:reshape(3, 7, 5)):abs():max():item())   -- float32 all the way: w itself
   end)

   it('runs the activation layers on bf16 in C: bf16 out, no cast nodes, the widened op\'s numbers and gradients',
      function()
      for _, make in ipairs{
         function() return nn.ReLU() end, function() return nn.SiLU() end, function() return nn.Swish() end,
         function() return nn.Mish() end, function() return nn.Softsign() end,
         function() return nn.HardSigmoid() end, function() return nn.LeakyReLU(0.2) end,
         function() return nn.GELU() end, function() return nn.GELU({approximate = 'tanh'}) end} do
         local m = make()
         fnn.manual_seed(4)
         local v = fnn.randn(5, 3000) * 3                    -- long enough for the tiled path's pieces
         local p, q = fnn.Param(v:bf16():float()), fnn.Param(v:bf16():float())
         local y = fnn.autocast('bf16', function() return m:forward(p:tensor():bf16()) end)
         assert.equals('bfloat16', y:dtype(), tostring(m))
         assert.is_not.equals('bf16', y:grad_fn(), tostring(m))   -- made by the op, not by a narrowing
         local want = m:forward(q:tensor())                         -- float32 on the same values
         assert_rounded_equal(y, want, tostring(m))
         local w = fnn.randn(5, 3000)
         local l1 = (y:float() * w):sum()
         l1:backward()
         local l2 = (want * w):sum()
         l2:backward()
         assert.equals('float32', p:grad():dtype())
         assert.equals(0, (p:grad() - q:grad()):abs():max():item(), tostring(m))
      end
   end)

   it('keeps an op\'s errors at the caller\'s line on the wrapper\'s short path, inside autocast too', function()
      local a, b = fnn.randn(2, 3):bf16(), fnn.randn(4, 5)
      local line = debug.getinfo(1, 'l').currentline + 1
      local e = err_of(function() return fnn.autocast('bf16', function() local y = fnn.linear(a, b); return y end) end)
      assert.matches('bf16_spec.lua:' .. line .. ': linear', e, 1, true)
   end)

   it('runs inside nn\'s layers: a bf16 input gives a bf16 output', function()
      fnn.manual_seed(6)
      local x = fnn.randn(3, 8)
      for _, m in ipairs{nn.Linear(8, 4), nn.LayerNorm(8), nn.ReLU(), nn.Dropout(0.5):eval(), nn.GELU()} do
         local y = m:forward(x:bf16())
         assert.equals('bfloat16', y:dtype())
         assert_rounded_equal(y, m:forward(x:bf16():float()), tostring(m))
      end
   end)
end)

describe('autograd through bfloat16', function()
   it('keeps the gradient of a bf16 tensor in float32: parameters get float32 gradients', function()
      local w = nn.Param(fnn.randn(3, 4))
      local loss = ((w:tensor():bf16() * 2):relu():sum())
      assert.equals('bfloat16', loss:dtype())
      loss:backward()
      assert.equals('float32', w:grad():dtype())
      local mask = w:tensor():bf16():gt(0):float()
      assert.equals(0, (w:grad() - mask * 2):abs():max():item())
   end)

   it('gives the float32 path\'s gradients on the same values, within bf16\'s 8-bit mantissa', function()
      fnn.manual_seed(8)
      local x, w1, w2 = fnn.randn(16, 12), fnn.randn(20, 12) * 0.3, fnn.randn(5, 20) * 0.3
      local target = ids{1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1}
      local function run(cast)
         local p1, p2 = nn.Param(w1), nn.Param(w2)
         local h = fnn.linear(cast(x), cast(p1:tensor())):tanh()
         local out = fnn.linear(h, cast(p2:tensor()))
         local loss = fnn.cross_entropy(out:float(), target)
         loss:backward()
         return p1:grad(), p2:grad(), loss:item()
      end
      local g1, g2, l16 = run(function(t) return t:bf16() end)
      -- the float32 path on the same rounded values, the rounding passed straight through by the gradient
      local e1, e2, l32 = run(function(t) return t + (ref.rounded(t:detach()) - t:detach()) end)
      assert.is_true(math.abs(l16 - l32) <= 2 ^ -7 * math.abs(l32) + 1e-3)
      for _, pair in ipairs{{g1, e1}, {g2, e2}} do
         local scale = pair[2]:abs():max():item()
         -- a few bf16 roundings of each value on the way (h, out): a few units of 2^-8
         assert.is_true((pair[1] - pair[2]):abs():max():item() <= 2 ^ -5 * scale)
      end
   end)

   it('passes finite differences through bf16 with a step far above bf16\'s spacing', function()
      fnn.manual_seed(9)
      local ok, report = fnn.gradcheck(function(x) return ((x:bf16() * 3 + 1):float()) end,
                                       {fnn.rand(3, 4) - 0.5}, {eps = 0.25, atol = 2e-2, rtol = 2e-2})
      assert(ok, tostring(report))
   end)
end)

describe('fnn.autocast', function()
   -- tensors keep the first load's methods (the metatype is bound once per process): a region opened
   -- by a later load (busted loads fastnn afresh for each spec file) must reach their wrappers too
   it('opens its region for tensor methods when fastnn was loaded again in the process', function()
      local x, w = fnn.randn(3, 4), fnn.randn(4, 5)
      require('support').second_load(function(fnn2)
         local y, mine = fnn2.autocast('bf16', function() return x:matmul(w), fnn2.matmul(x, w) end)
         assert.equals('bfloat16', y:dtype())
         assert.equals('bfloat16', mine:dtype())
         assert.is_true(fnn2.autocast('bf16', function() return fnn.is_autocast_enabled() end))
      end)
      assert.equals('float32', x:matmul(w):dtype())
   end)

   it('gives a node made in the region bf16 products in its backward, wherever backward() is called', function()
      -- the usual idiom closes the region before backward(): the node remembers it (PyTorch runs an
      -- autocast product's backward in bf16 too). G = r is exact in bf16, so dW = r^T round(x)
      fnn.manual_seed(12)
      local x, r = fnn.randn(64, 96), fnn.randn(64, 32):bf16():float()
      local function dw(inside)
         local w = nn.Param(fnn.randn(32, 96))
         local function step()
            local y = fnn.autocast('bf16', function() return fnn.linear(x, w:tensor()) end)
            local l = (y:float() * r):sum()
            l:backward()
         end
         if inside then fnn.autocast('bf16', step) else step() end
         return w:grad()
      end
      local after, inside = dw(false), dw(true)   -- dW does not depend on w
      assert.equals(0, (after - inside):abs():max():item())
      local want = r:t():matmul(x:bf16():float())
      local exact = r:t():matmul(x)
      local scale = r:abs():t():matmul(x:abs()):max():item()
      assert.is_true((after - want):abs():max():item() <= 1e-5 * scale)
      assert.is_true((after - exact):abs():max():item() > 1e-3)
      -- a node made outside a region keeps float32 products when backward() runs outside one
      local w = nn.Param(fnn.randn(32, 96))
      ;(fnn.linear(x, w:tensor()) * r):sum():backward()
      assert.is_true((w:grad() - exact):abs():max():item() <= 1e-5 * scale)
   end)

   it('runs the GEMM-bound ops with bf16 operands and returns bf16', function()
      fnn.manual_seed(10)
      local x, w, b = fnn.randn(8, 40), fnn.randn(6, 40), fnn.randn(6)
      local y = fnn.autocast('bf16', function() return fnn.linear(x, w, b) end)
      assert.equals('bfloat16', y:dtype())
      -- the float32 op on rounded operands (the bias is added in float32), then rounded; the sums may
      -- differ in order, so one bf16 unit
      local want = fnn.linear(ref.rounded(x), ref.rounded(w), b)
      local g, r = y:float():to_flat(), want:to_flat()
      for i = 1, #r do assert(math.abs(g[i] - r[i]) <= 2 ^ -7 * math.abs(r[i]) + 1e-6, 'element ' .. i) end
      for _, op in ipairs{function() return x:matmul(w:t()) end,
                          function() return fnn.conv2d(fnn.randn(1, 2, 5, 5), fnn.randn(3, 2, 3, 3)) end,
                          function() local q = fnn.randn(1, 1, 4, 8); return fnn.attention(q, q, q) end,
                          function() return fnn.bmm(fnn.randn(2, 3, 4), fnn.randn(2, 4, 5)) end} do
         assert.equals('bfloat16', fnn.autocast('bf16', op):dtype())
      end
   end)

   it('runs softmax, log_softmax, norms, losses, exp/log and reductions in float32', function()
      local b = fnn.randn(4, 6):bf16()
      local out = fnn.autocast('bf16', function()
         return {b:softmax(2), b:log_softmax(2), fnn.layer_norm(b), b:exp(), b:abs():log(), b:sum(), b:mean(2),
                 fnn.cross_entropy(b, ids{1, 2, 3, 4}), nn.mse(b, b * 0.5)}
      end)
      for i, t in ipairs(out) do assert.equals('float32', t:dtype(), 'result ' .. i) end
      -- and the other ops keep bf16 activations bf16
      local kept = fnn.autocast('bf16', function() return {b:relu(), b:gelu(), b * 2, b:transpose(1, 2)} end)
      for i, t in ipairs(kept) do assert.equals('bfloat16', t:dtype(), 'kept ' .. i) end
   end)

   it('keeps parameters and their gradients float32, so an optimizer steps unchanged', function()
      fnn.manual_seed(11)
      local model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
      local opt = fnn.optim.Adam(model:parameters(), {lr = 1e-2})
      local x, y = fnn.randn(64, 10), ids{}
      local t = {}
      for i = 1, 64 do t[i] = (i % 3) + 1 end
      y = ids(t)
      local first, last
      for step = 1, 30 do
         local loss = fnn.autocast('bf16', function() return fnn.cross_entropy(model:forward(x), y) end)
         assert.equals('float32', loss:dtype())
         opt:zero_grad()
         loss:backward()
         opt:step()
         first = first or loss:item()
         last = loss:item()
      end
      for _, p in ipairs(model:parameters()) do
         assert.equals('float32', p:tensor():dtype())
         assert.equals('float32', p:grad():dtype())
      end
      assert.is_true(last < 0.7 * first, ('loss went from %g to %g'):format(first, last))
   end)

   it('nests, composes with no_grad, ends with its region (also on an error) and belongs to its thread', function()
      local x, w = fnn.randn(2, 3), nn.Param(fnn.randn(4, 3))
      assert.is_false(fnn.is_autocast_enabled())
      fnn.autocast('bf16', function()
         assert.is_true(fnn.is_autocast_enabled())
         fnn.autocast('bf16', function() assert.is_true(fnn.is_autocast_enabled()) end)
         assert.is_true(fnn.is_autocast_enabled())
         local y = fnn.no_grad(function() return fnn.linear(x, w:tensor()) end)
         assert.equals('bfloat16', y:dtype())
         assert.is_nil(y:grad_fn())
      end)
      assert.is_false(fnn.is_autocast_enabled())
      assert.equals('float32', fnn.linear(x, w:tensor()):dtype())
      local ok = pcall(fnn.autocast, 'bf16', function() error('boom') end)
      assert.is_false(ok)
      assert.is_false(fnn.is_autocast_enabled())
      assert.equals('float32', fnn.linear(x, w:tensor()):dtype())
      -- the C side's region ended too: a float32 product outside is exact float32
      local a, b = fnn.randn(16, 64), fnn.randn(64, 16)
      local exact = a:matmul(b)
      fnn.autocast('bf16', function() return a:matmul(b) end)
      assert.equals(0, (a:matmul(b) - exact):abs():max():item())
   end)

   it('refuses a mode it does not have and a missing function, at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local e = err_of(function() fnn.autocast('fp16', function() end) end)
      assert.matches('bf16_spec.lua:' .. line .. ": autocast: mode 'fp16' is not 'bf16'", e, 1, true)
      assert.matches('autocast: expected a function to run, got', err_of(function() fnn.autocast('bf16') end))
   end)

   it('reaches nn\'s layers: GEMM layers return bf16, norms and loss modules float32', function()
      local x = fnn.randn(2, 5, 8)
      local out = fnn.autocast('bf16', function()
         return {nn.Linear(8, 4):forward(x), nn.Conv1d(5, 3, 3):forward(x), (nn.LSTM(8, 4):forward(x)),
                 nn.MultiheadAttention(8, 2):forward(x), nn.LayerNorm(8):forward(x),
                 nn.CrossEntropyLoss():forward(x:reshape(10, 8), ids{1, 2, 3, 4, 5, 6, 7, 8, 1, 2})}
      end)
      for i = 1, 4 do
         local t = type(out[i]) == 'table' and out[i][1] or out[i]
         assert.equals('bfloat16', t:dtype(), 'layer ' .. i)
      end
      assert.equals('float32', out[5]:dtype())
      assert.equals('float32', out[6]:dtype())
   end)

   it('is Keras\'s mixed_bf16 policy: compile{precision = "mixed_bf16"} trains like float32', function()
      local results = {}
      for _, prec in ipairs{'float32', 'mixed_bf16'} do
         fnn.manual_seed(12)
         local x = fnn.randn(200, 6)
         local y = (x:narrow(2, 1, 1) + x:narrow(2, 2, 1) * 0.5)
         local m = nn.Sequential(nn.Dense(16, 'tanh'), nn.Dense(1))
         m:compile{optimizer = 'adam', loss = 'mse', precision = prec}
         m:fit(x, y, {epochs = 20, batch_size = 20, verbose = 0})
         results[prec] = m:evaluate(x, y)
         assert.equals('float32', m:predict(x):dtype())
         for _, p in ipairs(m:parameters()) do assert.equals('float32', p:tensor():dtype()) end
      end
      assert.is_true(results.mixed_bf16 < 0.2, 'mixed_bf16 loss ' .. results.mixed_bf16)
      assert.is_true(math.abs(results.mixed_bf16 - results.float32) <= 0.1 * results.float32 + 0.01,
                     ('float32 %g, mixed_bf16 %g'):format(results.float32, results.mixed_bf16))
   end)
end)

describe('bf16 checkpoints', function()
   it('save bf16 tensors as BF16 and load them back as bf16 with {dtype = "keep"}, or widened', function()
      local path = dir .. '/t.safetensors'
      local x = fnn.randn(5, 6)
      fnn.save_safetensors({a = x:bf16(), b = x, c = ids{1, 2}}, path)
      local kinds = {}
      for _, t in ipairs(serialize.info(path).tensors) do kinds[t.name] = t.dtype end
      assert.same({a = 'BF16', b = 'F32', c = 'I64'}, kinds)
      local kept = fnn.load_safetensors(path, {dtype = 'keep'})
      assert.equals('bfloat16', kept.a:dtype())
      assert_rounded_equal(kept.a, x, 'kept')
      assert.equals('float32', kept.b:dtype())
      local widened = fnn.load_safetensors(path)
      assert.equals('float32', widened.a:dtype())
      assert_rounded_equal(widened.a, x, 'widened')
      assert.matches("dtype 'keep' applies to a load into a table",
                     err_of(function() fnn.load_safetensors(nn.Linear(2, 2), path, {dtype = 'keep'}) end))
   end)

   it('a model trained under autocast saves float32 parameters', function()
      local m = nn.Linear(4, 2)
      local loss = fnn.autocast('bf16', function() return m:forward(fnn.randn(3, 4)):float():sum() end)
      loss:backward()
      local path = dir .. '/m.fdl'
      fnn.save(m, path)
      for _, t in ipairs(serialize.info(path).tensors) do assert.equals('F32', t.dtype) end
   end)
end)
