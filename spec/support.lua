-- Helpers shared by the specs: comparing tensors with expected values and
-- walking row-major index tuples for the naive reference loops.
local assert = require 'luassert'   -- busted's assert lives in spec environments, not in _G
local M = {}

-- expected: a flat Lua array; t: a tensor or a flat Lua array. tol is relative
-- for values above 1 in magnitude and absolute below; nan matches only nan.
function M.approx(expected, t, tol)
   local got = type(t) == 'table' and t or t:to_flat()
   assert.equals(#expected, #got)
   for i = 1, #expected do
      local e, g = expected[i], got[i]
      if e ~= e then
         assert.is_true(g ~= g, ('element %d: expected nan got %.7g'):format(i, g))
      else
         assert.is_true(math.abs(e - g) <= (tol or 1e-5) * math.max(1, math.abs(e)),
                        ('element %d: expected %.7g got %.7g'):format(i, e, g))
      end
   end
end

-- the same with an absolute tolerance (default 1e-6) for every element
function M.approx_abs(expected, t, tol)
   local got = type(t) == 'table' and t or t:to_flat()
   assert.equals(#expected, #got)
   for i = 1, #expected do
      assert.is_true(math.abs(expected[i] - got[i]) <= (tol or 1e-6),
                     ('element %d: expected %.7g got %.7g'):format(i, expected[i], got[i]))
   end
end

-- 1, 2, 3, ... shaped like shape (above 16 elements the data lives in a shared storage)
function M.seq(shape)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   return require('fastnn').arange(1, n + 1):float():reshape(shape)
end

-- the error message of f, which must raise
function M.err_of(f)
   local ok, err = pcall(f)
   assert.is_false(ok, 'expected an error')
   return err
end

-- call f(idx) for every 1-based index tuple of shape, in row-major order
function M.each_index(shape, f)
   local n = 1
   for _, s in ipairs(shape) do n = n * s end
   if n == 0 then return end
   local idx = {}
   for i = 1, #shape do idx[i] = 1 end
   for _ = 1, n do
      f(idx)
      for d = #shape, 1, -1 do
         idx[d] = idx[d] + 1
         if idx[d] <= shape[d] then break end
         idx[d] = 1
      end
   end
end

-- the 1-based flat position of idx in a row-major tensor of shape
function M.pos(shape, idx)
   local p = 0
   for d = 1, #shape do p = p * shape[d] + (idx[d] - 1) end
   return p + 1
end

-- the values of an output of `shape` whose element at idx is f(idx)
function M.build(shape, f)
   local r = {}
   M.each_index(shape, function(idx) r[#r + 1] = f(idx) end)
   return r
end

-- the largest |a - b| over the largest |a| (at least 1): tensors of one size
function M.rel_diff(a, b)
   local fa, fb = a:to_flat(), b:to_flat()
   assert.equals(#fa, #fb)
   local worst, scale = 0, 1
   for i = 1, #fa do
      worst = math.max(worst, math.abs(fa[i] - fb[i]))
      scale = math.max(scale, math.abs(fa[i]))
   end
   return worst / scale
end

-- erf by its power series (exact enough for |x| < 3), for reference values
function M.erf(x)
   local s, term, n = x, x, 0
   repeat
      n = n + 1
      term = -term * x * x / n
      s = s + term / (2 * n + 1)
   until math.abs(term) < 1e-13
   return 2 / math.sqrt(math.pi) * s
end


-- the batches of one pass of a DataLoader as plain Lua values, read as each batch comes (before the
-- next one, so a loader that reuses its buffers is read correctly too)
function M.batches(loader)
   local out = {}
   for batch, index in loader:iter() do
      assert.equals(#out + 1, index)
      out[#out + 1] = {size = batch.size, inputs = batch.inputs:to_flat(), ishape = batch.inputs:shape(),
                       idtype = batch.inputs:dtype(),
                       targets = batch.targets and batch.targets:to_flat(),
                       tshape = batch.targets and batch.targets:shape()}
   end
   return out
end
-- f(fnn2) with fastnn loaded a second time in this process (package.loaded's fastnn modules set
-- aside, then put back), as busted does for each spec file while tensors keep the methods of the
-- process's first load (the ffi metatype is bound once); errors in f are raised after the restore
function M.second_load(f)
   local saved = {}
   for name, m in pairs(package.loaded) do
      if name == 'fastnn' or name:match('^fastnn%.') then saved[name] = m; package.loaded[name] = nil end
   end
   local ok, err = pcall(function() f(require 'fastnn') end)
   for name in pairs(package.loaded) do
      if name == 'fastnn' or name:match('^fastnn%.') then package.loaded[name] = nil end
   end
   for name, m in pairs(saved) do package.loaded[name] = m end
   assert(ok, err)
end
-- the composition specs of the ops that take bfloat16 in C (linear_bf16, conv_bf16, matmul_bf16):
-- a and b hold the same dtype, shape and values, exactly (NaN where the other has NaN)
function M.same_tensor(a, b, what)
   assert.equals(b:dtype(), a:dtype(), what .. ': dtype')
   assert.same(b:shape(), a:shape(), what .. ': shape')
   local fa, fb = a:to_flat(), b:to_flat()
   for i = 1, #fa do
      if fa[i] ~= fb[i] and not (fa[i] ~= fa[i] and fb[i] ~= fb[i]) then
         error(('%s: element %d is %.9g, the composition gives %.9g'):format(what, i, fa[i], fb[i]), 2)
      end
   end
end

-- the ways an op with an input and weights meets bfloat16: x (and w, b) converted from float32 leaves,
-- inside autocast or under bf16 precision, and the output dtype precision.lua's rule gives
M.BF16_MODES = {
   {name = 'bf16 x, float32 w: float32 out', x = true, out = 'float32'},
   {name = 'every input bf16: bf16 out', x = true, wb = true, out = 'bfloat16'},
   {name = 'autocast, float32 x: bf16 out', autocast = true, out = 'bfloat16'},
   {name = 'autocast, bf16 x: bf16 out', autocast = true, x = true, out = 'bfloat16'},
   {name = 'autocast, every input bf16: bf16 out', autocast = true, x = true, wb = true, out = 'bfloat16'},
   {name = "set_float32_precision('bf16'), bf16 x: float32 out", prec = true, x = true, out = 'float32'},
   {name = "set_float32_precision('bf16'), every input bf16: bf16 out", prec = true, x = true, wb = true,
    out = 'bfloat16'},
}
-- a tensor of multiples of 1/8 in [-1/2, 1/2] (fnn.rand's shape arguments): exact in bf16, with the
-- short sums of products the bf16 gradchecks take, so steps of 1/4 keep difference quotients exact
function M.eighths(...)
   local t = require('fastnn').rand(...)
   local v = t:to_flat()
   for i = 1, #v do v[i] = math.floor(v[i] * 9) / 8 - 0.5 end
   return require('fastnn').tensor(v, t:shape())
end

-- the bf16 composition specs' kernel sets (oneDNN's where built, the portable ones); registers, through the
-- calling spec file's after_each (busted's globals live in its environment), the hook that puts back what
-- the cases change: ieee precision, oneDNN's kernels, 1 thread
function M.bf16_kernels(after_each)
   local fnn = require 'fastnn'
   local has_onednn = not fnn.config().onednn:match('^not built')
   after_each(function()
      fnn.set_float32_precision('ieee')
      if has_onednn then fnn.set_kernels('onednn') end
      fnn.set_num_threads(1)
   end)
   return has_onednn and {'onednn', 'portable'} or {'portable'}
end

-- an op's node keeps its bf16 operand as given: op(x, w) on a bf16 x [256, 64] and a float32 Param w of
-- w_shape holds its output (float32, 32 KiB) and the saved bf16 x (32 KiB), not a float32 copy of x
-- besides (64 KiB); then backward gives w its gradient
function M.holds_bf16_as_given(op, w_shape)
   local fnn = require 'fastnn'
   fnn.manual_seed(4)
   local w = fnn.nn.Param(fnn.randn(table.unpack(w_shape)))
   collectgarbage(); collectgarbage()
   local base = fnn.live_bytes()
   local x = fnn.randn(256, 64):bf16()
   local y = op(x, w:tensor())
   x = nil
   collectgarbage(); collectgarbage()
   local held = fnn.live_bytes() - base
   assert.is_true(held <= 2 * 32768 + 4096, ('%d bytes held'):format(held))
   y:sum():backward()
   assert.same(w_shape, w:grad():shape())
end

-- an fnn.profile report of a step under autocast holds no widening (float) or narrowing (bf16) node: the
-- GEMM-bound ops took and gave bf16 themselves; returns its rows as 'name/kind' words, space-separated
function M.ops_without_casts(report)
   local names = {}
   for _, row in ipairs(report.rows) do
      names[#names + 1] = row.name .. '/' .. row.kind
      assert.is_not.equals('float', row.name, 'a widening node')
      assert.is_not.equals('bf16', row.name, 'a narrowing node')
   end
   return table.concat(names, ' ')
end

-- step() as the bf16 composition specs run a mode: the op on bf16 in C inside autocast (native), else
-- the widen-op-round composition under bf16 precision (autocast's products are bf16 precision's)
function M.bf16_run(native, mode, step)
   local fnn = require 'fastnn'
   if native and mode.autocast then return fnn.autocast('bf16', step) end
   if mode.autocast or mode.prec then fnn.set_float32_precision('bf16') end
   step()
   fnn.set_float32_precision('ieee')
end
return M
