-- Transformer layers and stacks: the wiring of each layer against its own children called by hand
-- (the children are checked in attention_spec and elsewhere), causality, shapes and names,
-- cached decoding against the whole prefix, and the errors.
local fnn = require 'fastnn'
local nn = fnn.nn
local S = require 'support'

local function rnd(...) return fnn.randn(...) end
local function max_abs_diff(a, b)
   local fa, fb, m = a:to_flat(), b:to_flat(), 0
   assert.equals(#fa, #fb)
   for i = 1, #fa do m = math.max(m, math.abs(fa[i] - fb[i])) end
   return m
end
-- biases and norms away from their zero/one init, so a miswired one shows
local function randomize(m)
   for _, p in ipairs(m:parameters()) do p:set(fnn.randn(p:shape()) * 0.3) end
   return m
end

describe('nn.TransformerEncoderLayer', function()
   it('is post-norm with ReLU by default, as PyTorch', function()
      fnn.manual_seed(1)
      local l = randomize(nn.TransformerEncoderLayer(8, 2, 16, {dropout = 0}))
      local x = rnd(2, 5, 8)
      local h = l.norm1(x + l.self_attn(x))
      local want = l.norm2(h + l.linear2(l.linear1(h):relu()))
      S.approx_abs(want:to_flat(), l(x), 1e-5)
   end)

   it('is pre-norm with GELU when asked, and passes causal and the padding mask on', function()
      fnn.manual_seed(2)
      local l = randomize(nn.TransformerEncoderLayer(8, 4, 12, {dropout = 0, norm_first = true, activation = 'gelu'}))
      local x = rnd(2, 4, 8)
      local opts = {causal = true, key_padding_mask = fnn.tensor{{0, 0, 1, 0}, {0, 0, 0, 0}}}
      local h = x + l.self_attn(l.norm1(x), opts)
      local want = h + l.linear2(l.linear1(l.norm2(h)):gelu())
      S.approx_abs(want:to_flat(), l(x, opts), 1e-5)
   end)

   it('names its parameters as PyTorch does', function()
      local names = {}
      for i, pair in ipairs(nn.TransformerEncoderLayer(8, 2, 16):named_parameters()) do names[i] = pair[1] end
      assert.same({'self_attn.in_proj_weight', 'self_attn.in_proj_bias', 'self_attn.out_proj.weight',
                   'self_attn.out_proj.bias', 'linear1.weight', 'linear1.bias', 'linear2.weight', 'linear2.bias',
                   'norm1.weight', 'norm1.bias', 'norm2.weight', 'norm2.bias'}, names)
   end)

   it('applies dropout only in training', function()
      fnn.manual_seed(3)
      local l = nn.TransformerEncoderLayer(8, 2, 16, {dropout = 0.5})
      local x = rnd(1, 6, 8)
      local a, b = l(x), l(x)
      assert.is_true(max_abs_diff(a, b) > 1e-3)
      l:eval()
      assert.equals(0, max_abs_diff(l(x), l(x)))
   end)

   it('has gradients that match finite differences', function()
      fnn.manual_seed(4)
      local l = randomize(nn.TransformerEncoderLayer(4, 2, 6, {dropout = 0, activation = 'gelu'}))
      local ok, report = fnn.gradcheck(function(x) return l(x, {causal = true}) end, {rnd(1, 3, 4)})
      assert(ok, report)
   end)
end)

describe('nn.TransformerDecoderLayer', function()
   it('is causal self-attention, cross-attention and the MLP, post-norm', function()
      fnn.manual_seed(5)
      local l = randomize(nn.TransformerDecoderLayer(8, 2, 16, {dropout = 0}))
      local x, mem = rnd(2, 4, 8), rnd(2, 6, 8)
      local mmask = fnn.tensor{{0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 0, 1}}
      local h = l.norm1(x + l.self_attn(x, {causal = true}))
      h = l.norm2(h + l.multihead_attn(h, mem, mem, {key_padding_mask = mmask}))
      local want = l.norm3(h + l.linear2(l.linear1(h):relu()))
      S.approx_abs(want:to_flat(), l(x, mem, {memory_key_padding_mask = mmask}), 1e-5)
   end)

   it('pre-norm: later target positions do not change earlier outputs', function()
      fnn.manual_seed(6)
      local l = randomize(nn.TransformerDecoderLayer(8, 2, 16, {dropout = 0, norm_first = true}))
      local x, mem = rnd(1, 5, 8), rnd(1, 3, 8)
      local y = l(x, mem)
      local x2 = fnn.cat({x:narrow(2, 1, 3), rnd(1, 2, 8)}, 2)
      local y2 = l(x2, mem)
      assert.is_true(max_abs_diff(y:narrow(2, 1, 3), y2:narrow(2, 1, 3)) < 1e-5)
      assert.is_true(max_abs_diff(y:narrow(2, 4, 2), y2:narrow(2, 4, 2)) > 1e-3)
      -- without the causal mask the first position sees the rest
      local y3 = l(x2, mem, {causal = false})
      assert.is_true(max_abs_diff(l(x, mem, {causal = false}):narrow(2, 1, 1), y3:narrow(2, 1, 1)) > 1e-4)
   end)
end)

describe('encoder and decoder stacks', function()
   it('run their layers in order with a final norm for pre-norm', function()
      fnn.manual_seed(7)
      local enc = randomize(nn.TransformerEncoder(8, 2, 16, 2, {dropout = 0, norm_first = true}))
      local dec = randomize(nn.TransformerDecoder(8, 2, 16, 3, {dropout = 0, norm_first = true}))
      local src, tgt = rnd(2, 6, 8), rnd(2, 4, 8)
      local mem = enc(src)
      S.approx_abs(enc.norm(enc.layers[2](enc.layers[1](src))):to_flat(), mem, 1e-5)
      local y = dec(tgt, mem)
      assert.same({2, 4, 8}, y:shape())
      local h = tgt
      for i = 1, 3 do h = dec.layers[i](h, mem) end
      S.approx_abs(dec.norm(h):to_flat(), y, 1e-5)
      assert.is_nil(nn.TransformerEncoder(8, 2, 16, 1, {dropout = 0}).norm)   -- post-norm: none
      assert.equals('layers.2.multihead_attn.in_proj_weight', dec:named_parameters()[23][1])
   end)

   it('train end to end (loss goes down)', function()
      fnn.manual_seed(8)
      local dec = nn.TransformerDecoder(8, 2, 16, 1, {dropout = 0})
      local head = nn.Linear(8, 3)
      local params = dec:parameters()
      for _, p in ipairs(head:parameters()) do params[#params + 1] = p end
      local opt = fnn.optim.Adam(params, 1e-2)
      local tgt, mem, ids = rnd(2, 4, 8), rnd(2, 5, 8), fnn.tensor{1, 2, 3, 1, 2, 3, 1, 2}
      local first, last
      for step = 1, 50 do
         opt:zero_grad()
         local loss = nn.cross_entropy(head(dec(tgt, mem)):reshape(8, 3), ids)
         loss:backward()
         opt:step()
         if step == 1 then first = loss:item() end
         last = loss:item()
      end
      assert.is_true(last < 0.5 * first)
   end)
end)

describe('nn.TransformerStack.causal', function()
   it('decodes from its cache the logits the whole prefix gives, for 20 steps', function()
      fnn.manual_seed(9)
      local W, V = 16, 11
      local stack = randomize(nn.TransformerStack.causal(W, 4, 32, 2, 0.1)):eval()
      local head = randomize(nn.Linear(W, V))
      local x = rnd(1, 20, W)
      local full = head(stack(x))                       -- [1, 20, V]
      local cache = stack:new_cache{capacity = 4}       -- grows twice on the way
      local worst = 0
      for t = 1, 20 do
         local y = head(stack:forward_cached(x:narrow(2, t, 1), cache))
         assert.equals(t, cache:len())
         worst = math.max(worst, max_abs_diff(full:narrow(2, t, 1), y))
      end
      assert.is_true(worst <= 1e-5, 'max abs diff ' .. worst)
      assert.is_true(cache:capacity() >= 20)
   end)

   it('takes several positions per cached step, and a batch', function()
      fnn.manual_seed(10)
      local stack = randomize(nn.TransformerStack.causal(8, 2, 16, 2)):eval()
      local x = rnd(3, 9, 8)
      local full = stack(x)
      local cache = stack:new_cache()
      local a = stack:forward_cached(x:narrow(2, 1, 5), cache)
      local b = stack:forward_cached(x:narrow(2, 6, 4), cache)
      assert.equals(9, cache:len())
      assert.is_true(max_abs_diff(full:narrow(2, 1, 5), a) <= 1e-5)
      assert.is_true(max_abs_diff(full:narrow(2, 6, 4), b) <= 1e-5)
      cache:reset()
      assert.equals(0, cache:len())
      assert.is_true(max_abs_diff(full:narrow(2, 1, 2), stack:forward_cached(x:narrow(2, 1, 2), cache)) <= 1e-5)
   end)

   it('saves and loads by name (a checkpoint round trip gives the same outputs)', function()
      fnn.manual_seed(11)
      local a = randomize(nn.TransformerStack.causal(8, 2, 16, 2)):eval()
      local b = nn.TransformerStack.causal(8, 2, 16, 2):eval()
      local path = os.tmpname()
      fnn.save(a, path)
      fnn.load(b, path)
      os.remove(path)
      local x = rnd(1, 5, 8)
      assert.equals(0, max_abs_diff(a(x), b(x)))
   end)

   it('is pre-norm GELU layers with a final norm, named layers.<i>', function()
      local stack = nn.TransformerStack.causal(8, 2, 16, 3)
      assert.equals(3, #stack.layers)
      assert.is_true(stack.layers[1].norm_first)
      assert.equals('gelu', stack.layers[2].activation)
      assert.truthy(stack.norm)
      assert.equals('layers.1.self_attn.in_proj_weight', stack:named_parameters()[1][1])
      local n = #stack:named_parameters()
      assert.equals('norm.bias', stack:named_parameters()[n][1])
   end)

   it('refuses bad sizes, inputs and caches with clear errors', function()
      assert.matches('nn.TransformerEncoderLayer: width 10 is not divisible by heads 4',
                     S.err_of(function() nn.TransformerEncoderLayer(10, 4, 16) end))
      assert.matches('transformer_spec%.lua:%d+:', S.err_of(function() nn.TransformerEncoderLayer(10, 4, 16) end))
      assert.matches('nn.TransformerStack: width 10 is not divisible by heads 3',
                     S.err_of(function() nn.TransformerStack.causal(10, 3, 16, 2) end))
      assert.matches('nn.TransformerDecoderLayer: width 6 is not divisible by heads 4',
                     S.err_of(function() nn.TransformerDecoderLayer(6, 4, 8) end))
      local stack = nn.TransformerStack.causal(8, 2, 16, 1)
      assert.matches('input %[2,3,6%] does not match %[N, T, 8%]', S.err_of(function() stack(rnd(2, 3, 6)) end))
      assert.matches('transformer_spec%.lua:%d+:', S.err_of(function() stack(rnd(2, 3, 6)) end))
      local cache = stack:new_cache()
      stack:forward_cached(rnd(2, 1, 8), cache)
      assert.matches('a step of batch 3 on a cache of batch 2',
                     S.err_of(function() stack:forward_cached(rnd(3, 1, 8), cache) end))
      assert.matches('forward_cached needs a cache from new_cache%(%)',
                     S.err_of(function() stack:forward_cached(rnd(2, 1, 8), {}) end))
      local l = nn.TransformerEncoderLayer(8, 2, 16)
      assert.matches('TransformerEncoderLayer%(width=8.*input %[2,3,4%] does not match %[N, T, 8%]',
                     S.err_of(function() l(rnd(2, 3, 4)) end))
      assert.matches('key_padding_mask %[2,4%] does not match the keys %(expected %[2,3%]%)',
                     S.err_of(function() l(rnd(2, 3, 8), {key_padding_mask = fnn.zeros(2, 4)}) end))
      local d = nn.TransformerDecoderLayer(8, 2, 16)
      assert.matches('memory %[2,3,5%] does not match %[N, T, 8%]', S.err_of(function() d(rnd(2, 3, 8), rnd(2, 3, 5)) end))
   end)
end)
