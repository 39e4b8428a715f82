-- fnn.attention's flash path (core/ops/attention.c): past one key block (ATTN_BK = 128 keys) the CPU
-- runs FlashAttention-2's blocks with an online softmax and keeps each query's log-sum-exp instead of
-- the [Tq,Tk] probabilities. Checked against the unfused composition with autograd (q k^T scale, the
-- masks as a -1e30 bias, softmax, times v; rows that see no key zeroed) at key counts around the
-- block's edges, under both kernel paths (oneDNN's GEMM through attn_gemm, and the portable kernels'
-- mm_nn), at 1 and 2 threads bit for bit, under bf16 precision against the rounded composition, and
-- for its memory: no [Tq,Tk] buffer at T = 2048.
local fnn = require 'fastnn'
local P = require 'spec.process'

local BLOCK = 128   -- attention.c's ATTN_BK
local has_onednn = not fnn.config().onednn:match('^not built')
local PATHS = has_onednn and {'onednn', 'portable'} or {'portable'}

local function max_diff(a, b) return (a - b):abs():max():item() end

-- the masks of a case as tensors: bias [B,1,Tq,Tk] (-1e30 where query i must not see key j) and
-- seen [B,1,Tq,1] (0 for a query that sees no key: the fused op gives it zeros); pad: Lua rows [B][Tk]
local function masks(B, Tq, Tk, causal, pad)
   local bias, seen = {}, {}
   for b = 1, B do
      for i = 1, Tq do
         local any = false
         for j = 1, Tk do
            local hidden = (causal and j > i + Tk - Tq) or (pad and pad[b][j] ~= 0)
            bias[#bias + 1] = hidden and -1e30 or 0
            any = any or not hidden
         end
         seen[#seen + 1] = any and 1 or 0
      end
   end
   return fnn.tensor(bias, {B, 1, Tq, Tk}), fnn.tensor(seen, {B, 1, Tq, 1})
end

-- output and the three gradients of (attention * w):sum(), fused or composed
local function run(fused, q0, k0, v0, w, opts)
   local Pq, Pk, Pv = fnn.Param(q0), fnn.Param(k0), fnn.Param(v0)
   local q, k, v = Pq:tensor(), Pk:tensor(), Pv:tensor()
   local y
   if fused then
      local o = {causal = opts.causal, scale = opts.scale}
      if opts.pad then o.key_padding_mask = opts.long and fnn.tensor(opts.pad):long() or fnn.tensor(opts.pad) end
      y = fnn.attention(q, k, v, o)
   else
      local B, Tq, Tk, D = q0:size(1), q0:size(3), k0:size(3), q0:size(4)
      local bias, seen = masks(B, Tq, Tk, opts.causal, opts.pad)
      local s = q:matmul(k:transpose(3, 4)) * (opts.scale or 1 / math.sqrt(D)) + bias
      y = s:softmax(-1):matmul(v) * seen
   end
   ;(y * w):sum():backward()
   return {y, Pq:grad(), Pk:grad(), Pv:grad()}
end

local NAMES = {'output', 'dq', 'dk', 'dv'}
-- fused against composed: each of the four within tol of the largest magnitude of the composed one
local function check(c, tol)
   fnn.manual_seed(c.seed or 1)
   local q = fnn.randn(c.B, c.H, c.Tq, c.D)
   local k = fnn.randn(c.B, c.H, c.Tk, c.D)
   local v = fnn.randn(c.B, c.H, c.Tk, c.Dv or c.D)
   local w = fnn.randn(c.B, c.H, c.Tq, c.Dv or c.D)
   local got, want = run(true, q, k, v, w, c), run(false, q, k, v, w, c)
   for i = 1, 4 do
      local d, size = max_diff(got[i], want[i]), want[i]:abs():max():item()
      assert.is_true(d <= tol * (1 + size), ('%s off by %g (largest %g)'):format(NAMES[i], d, size))
   end
   return got
end

describe('fnn.attention past one key block (the flash path)', function()
   -- first in the file: the allocator's peak is the process's since it started, so it runs in a fresh
   -- process. Forward and backward at T = 2048 would hold P and dS, 16 MB each, on the whole-matrix path
   it('allocates no [Tq,Tk] buffer: forward and backward at T = 2048 peak far below T*T*4 bytes', function()
      local dir = P.tmpdir()
      local script = dir .. '/flash_peak.lua'
      P.write_file(script, [[
package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path
local fnn = require 'fastnn'
fnn.manual_seed(1)
local T, D = 2048, 16
local q, k, v = fnn.Param(fnn.randn(1, 1, T, D)), fnn.Param(fnn.randn(1, 1, T, D)), fnn.Param(fnn.randn(1, 1, T, D))
local w = fnn.randn(1, 1, T, D)
collectgarbage(); collectgarbage()
local base = fnn.live_bytes()
local y = fnn.attention(q:tensor(), k:tensor(), v:tensor(), {causal = true})
;(y * w):sum():backward()
assert(q:grad() and k:grad() and v:grad())
io.write(string.format('%d %d\n', fnn.peak_bytes() - base, fnn.live_bytes() - base))
]])
      local p = io.popen('luajit ' .. P.quote(script) .. ' 2>&1')
      local out = p:read('*a')
      p:close()
      os.execute('rm -rf ' .. P.quote(dir))
      local peak = tonumber(out:match('^(%d+) '))
      assert.is_number(peak, out)
      local T = 2048
      -- q, k, v's gradients, the output with its lse, w's product and the blocks' scratch: about 1 MB
      assert.is_true(peak < T * T * 4 / 8, ('peak %d bytes over the start, against T*T*4 = %d'):format(peak, T * T * 4))
   end)

   for _, path in ipairs(PATHS) do
      describe('under the ' .. path .. ' kernels', function()
         before_each(function() fnn.set_kernels(path) end)
         after_each(function() if has_onednn then fnn.set_kernels('onednn') end end)

         -- key counts at the block's edges (block - 1 and block keep P, the others run in blocks) and
         -- past two blocks; an odd head width; causal and not
         for _, Tk in ipairs{BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3} do
            for _, causal in ipairs{false, true} do
               it(('matches the composition: B 2, H 3, T %d, D 17%s'):format(Tk, causal and ', causal' or ''), function()
                  check({B = 2, H = 3, Tq = Tk, Tk = Tk, D = 17, causal = causal, seed = Tk}, 2e-5)
               end)
            end
         end

         it('matches the composition with new queries after cached keys (causal, Tq < Tk)', function()
            check({B = 1, H = 2, Tq = 5, Tk = 2 * BLOCK + 3, D = 16, causal = true}, 2e-5)
            check({B = 2, H = 1, Tq = BLOCK + 2, Tk = 2 * BLOCK + 7, D = 8, Dv = 12, causal = true}, 2e-5)
            -- one new query (a decode step with gradients)
            check({B = 1, H = 2, Tq = 1, Tk = BLOCK + 40, D = 16, causal = true}, 2e-5)
         end)

         it('gives zeros and zero gradients to queries that see no key (causal with Tq > Tk)', function()
            local got = check({B = 1, H = 2, Tq = BLOCK + 60, Tk = BLOCK + 5, D = 8, causal = true}, 2e-5)
            -- the first 55 queries see no key
            assert.equals(0, got[1]:narrow(3, 1, 55):abs():max():item())
            assert.equals(0, got[2]:narrow(3, 1, 55):abs():max():item())
         end)

         it('matches the composition with a key padding mask (float and int64), a row all padding', function()
            local Tk = 2 * BLOCK + 3
            local pad = {{}, {}, {}}
            for j = 1, Tk do
               pad[1][j] = (j % 7 == 0 or j > Tk - 20) and 1 or 0   -- scattered, and a padded tail
               pad[2][j] = 1                                         -- all padding: zeros
               pad[3][j] = j <= BLOCK and 1 or 0                     -- a first block all padding
            end
            for _, long in ipairs{false, true} do
               for _, causal in ipairs{false, true} do
                  local got = check({B = 3, H = 2, Tq = Tk, Tk = Tk, D = 9, causal = causal, pad = pad, long = long},
                                    2e-5)
                  for i = 1, 4 do assert.equals(0, got[i]:narrow(1, 2, 1):abs():max():item(), NAMES[i]) end
               end
            end
            -- cached keys with padding, and a scale
            check({B = 3, H = 1, Tq = 4, Tk = Tk, D = 9, causal = true, pad = pad, scale = 0.3}, 2e-5)
         end)

         it('reads q, k and v through their strides (a [B,T,H,D] projection seen as [B,H,T,D])', function()
            fnn.manual_seed(4)
            local T = BLOCK + 9
            local x = fnn.randn(2, T, 3 * 4 * 8)   -- one QKV projection: 4 heads of 8
            local function split(i) return x:narrow(3, i * 32 + 1, 32):reshape(2, T, 4, 8):transpose(2, 3) end
            local y = fnn.attention(split(0), split(1), split(2), {causal = true})
            local want = fnn.attention(split(0):contiguous(), split(1):contiguous(), split(2):contiguous(),
                                       {causal = true})
            assert.equals(0, max_diff(y, want))
            assert.is_true(y:transpose(2, 3):is_contiguous())
         end)

         it('gives the same bits at 1 and 2 threads', function()
            local threads = fnn.get_num_threads()
            local Tk = 2 * BLOCK + 3
            local pad = {{}, {}}
            for j = 1, Tk do pad[1][j] = j % 5 == 0 and 1 or 0; pad[2][j] = 0 end
            fnn.manual_seed(9)
            local q, k, v = fnn.randn(2, 3, Tk, 16), fnn.randn(2, 3, Tk, 16), fnn.randn(2, 3, Tk, 16)
            local w = fnn.randn(2, 3, Tk, 16)
            local runs = {}
            for t = 1, 2 do
               fnn.set_num_threads(t)
               runs[t] = run(true, q, k, v, w, {causal = true, pad = pad})
            end
            fnn.set_num_threads(threads)
            for i = 1, 4 do assert.equals(0, max_diff(runs[1][i], runs[2][i]), NAMES[i]) end
         end)
      end)
   end

   -- bf16 precision: the products on rounded operands. The composition under the same setting rounds
   -- q and k for the scores, P and v for the output, and the incoming gradient, v, P, dS, k and q in
   -- the backward's products; the scale 1/4 (D 16) is a power of two, so scaling dS before or after its
   -- rounding is the same. The output takes P normalized (the forward's second pass), as the
   -- composition does, but as exp(S - lse) where the composition's softmax takes exp(S - max) / sum: an
   -- element whose float32 values differ in the last bit may round to bf16 the other way (2^-8 of that
   -- P; the whole-matrix path meets it too, 2.7e-4 at T 64 on this seed): 1e-4 of the largest, where
   -- float32's result is 5e-3 off. The backward takes rowsum(P dP) as the composition's softmax
   -- backward does (rowsum(dO O) from the rounded output would be as far off as float32's)
   it('under bf16 precision matches the rounded composition (both kernel paths)', function()
      local ref = require 'spec.bf16_reference'
      fnn.manual_seed(6)
      local B, H, T, D = 1, 2, 2 * BLOCK + 3, 16
      local q, k, v = fnn.randn(B, H, T, D), fnn.randn(B, H, T, D), fnn.randn(B, H, T, D)
      local w = ref.rounded(fnn.randn(B, H, T, D))   -- the incoming gradient exact in bf16
      for _, path in ipairs(PATHS) do
         fnn.set_kernels(path)
         fnn.set_float32_precision('bf16')
         local ok, err = pcall(function()
            local got, want = run(true, q, k, v, w, {causal = true}), run(false, q, k, v, w, {causal = true})
            fnn.set_float32_precision('ieee')
            local exact = run(true, q, k, v, w, {causal = true})
            for i = 1, 4 do
               local d, size = max_diff(got[i], want[i]), want[i]:abs():max():item()
               assert.is_true(d <= 1e-4 * (1 + size),
                              ('%s: %s off by %g (largest %g)'):format(path, NAMES[i], d, size))
               -- and bf16 changed the result: the float32 op is further off
               assert.is_true(max_diff(exact[i], want[i]) > 10 * d, ('%s: %s'):format(path, NAMES[i]))
            end
         end)
         fnn.set_float32_precision('ieee')
         if has_onednn then fnn.set_kernels('onednn') end
         assert(ok, err)
      end
   end)
end)
