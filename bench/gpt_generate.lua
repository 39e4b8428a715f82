-- gpt_generate: cached greedy decoding with char_gpt's architecture (2 pre-LN blocks, width 128,
-- 4 heads, MLP 512, exact GELU, final LayerNorm, head to vocab 65) and a position table of 256;
-- batch 1, 255 new tokens after a 1-token prompt, eval mode, no gradients; the counterpart of
-- reference/gpt_generate.py (WORKLOADS.md v2).
-- Each step feeds one token at position p and attends to the cached keys and values of 1..p
-- (nn.TransformerStack.causal's forward_cached: per-layer buffers preallocated for 256 positions,
-- appended in place, no concatenation of the prefix), then reads the argmax back to Lua.
-- Reports the median ms per token and late_over_early: the median of positions 192..255 over
-- that of 1..64 (0-based, as the reference counts them). One untimed warm-up generation first.
package.path = (arg[0]:match('^(.*)/[^/]*$') or '.') .. '/?.lua;' .. package.path
local B = require 'bench_util'
local fnn = B.fnn

local NAME, V, T, C, H, L, FF, NEW = 'gpt_generate', 65, 256, 128, 4, 2, 512, 255

B.main(NAME, function()
   B.setup_threads(NAME)
   local nn
   B.need{
      {'fastnn.nn', function() nn = fnn.nn; return nn end},
      {'nn.Linear', function() return nn.Linear end},
      {'nn.TransformerStack', function() return nn.TransformerStack end},
      {'fnn.attention', function() return fnn.attention end},
      {'Tensor:argmax', function() return fnn.Tensor.argmax end},
   }
   fnn.manual_seed(0)
   -- embeddings at nn.Embedding's init, N(0, 1); rows read by narrow (one view per step)
   local tok, pos = fnn.randn(V, C), fnn.randn(T, C)
   local stack = nn.TransformerStack.causal(C, H, FF, L, 0):eval()
   local head = nn.Linear(C, V):eval()
   local nparams = tok:numel() + pos:numel() + stack:num_parameters() + head:num_parameters()

   local function generate()
      local cache = stack:new_cache{capacity = T}
      local ids, times = {1}, {}                     -- token 0 of the reference is id 1 here
      fnn.no_grad(function()
         for p = 1, NEW do
            local t0 = B.now()
            local x = (tok:narrow(1, ids[#ids], 1) + pos:narrow(1, p, 1)):reshape(1, 1, C)
            local logits = head:forward(stack:forward_cached(x, cache))   -- [1, 1, V]
            ids[#ids + 1] = logits:reshape(V):argmax(1):item()            -- greedy, read back each step
            times[#times + 1] = B.now() - t0
         end
      end)
      return ids, times
   end

   generate()                                        -- warm-up, untimed
   local ids, times = generate()
   local ms = {}
   for i = 1, #times do ms[i] = times[i] * 1e3 end
   -- the reference's ms[1:65] and ms[192:256] (0-based slices of 255 steps)
   local early, late = {}, {}
   for i = 2, 65 do early[#early + 1] = ms[i] end
   for i = 193, #ms do late[#late + 1] = ms[i] end
   local e, l = B.median(early), B.median(late)
   local last = {}
   for i = #ids - 4, #ids do last[#last + 1] = ids[i] - 1 end
   print(('# params=%d new_tokens=%d total_s=%.3f early_ms=%.4f late_ms=%.4f last_ids=[%s] (0-based)'):format(
      nparams, NEW, B.sum(times), e, l, table.concat(last, ', ')))
   B.result(NAME, {'ms_per_token', B.median(ms), 'ms'}, {'late_over_early', l / e, 'x'})
end)
