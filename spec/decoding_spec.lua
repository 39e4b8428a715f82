-- Decoding: nn.Sampler and nn.BeamSearch.
-- Sampler against a reference written here (HF's warpers: temperature, top-k with ties kept,
-- nucleus, then the inverse CDF of one U[0,1) over the kept ids in order), draw for draw from the
-- same random stream; empirical distributions over many draws against softmax(logits / t) and its
-- top-k / nucleus renormalisations; greedy = argmax; reproducibility under fnn.manual_seed.
-- BeamSearch on Markov tables written here: width 1 against greedy decoding, full width and a
-- table where greedy goes wrong against exhaustive search (with and without length penalty);
-- then the errors, at the caller's line.
local fnn = require 'fastnn'
local nn = require 'fastnn.nn'
local C = require 'fastnn.C'
local support = require 'support'
local err_of = support.err_of

local inf = math.huge

-- ---------------------------------------------------------------------------
-- the sampling reference

-- kept[i] and weights w[i] = exp((x_i - max) / t) of the ids a draw can pick (HF's warpers)
local function kept_ref(x, t, k, p)
   local V, max, finite = #x, -inf, {}
   for i = 1, V do
      if x[i] > -inf then finite[#finite + 1] = x[i]; if x[i] > max then max = x[i] end end
   end
   local thr = -inf
   if k and k < #finite then
      table.sort(finite, function(a, b) return a > b end)
      thr = finite[k]                                   -- ties with the k-th stay
   end
   local keep, w = {}, {}
   for i = 1, V do
      keep[i] = x[i] > -inf and x[i] >= thr
      w[i] = keep[i] and math.exp((x[i] - max) / t) or 0
   end
   if p and p < 1 then
      local ids = {}
      for i = 1, V do if keep[i] then ids[#ids + 1] = i end end
      table.sort(ids, function(a, b) if x[a] ~= x[b] then return x[a] > x[b] end return a < b end)
      local total = 0
      for i = 1, V do total = total + w[i] end
      local above = 0
      for r, i in ipairs(ids) do
         if r > 1 and above >= p * total then keep[i] = false; w[i] = 0 end
         above = above + w[i]
      end
   end
   return keep, w
end

-- the probability of each id under the reference
local function probs_ref(x, t, k, p)
   local _, w = kept_ref(x, t, k, p)
   local total = 0
   for i = 1, #w do total = total + w[i] end
   local pr = {}
   for i = 1, #w do pr[i] = w[i] / total end
   return pr
end

-- the id one U[0,1) draw u picks: the inverse CDF over the kept ids in increasing order
local function pick_ref(x, t, k, p, u)
   local keep, w = kept_ref(x, t, k, p)
   local total = 0
   for i = 1, #x do total = total + w[i] end
   local target, acc, last = u * total, 0, nil
   for i = 1, #x do
      if keep[i] and w[i] > 0 then
         last = i
         acc = acc + w[i]
         if target < acc then return i end
      end
   end
   return last
end

local function same_ids(a, b)
   if #a ~= #b then return false end
   for i = 1, #a do if a[i] ~= b[i] then return false end end
   return true
end

local function argmax(x)
   local best = 1
   for i = 2, #x do if x[i] > x[best] then best = i end end
   return best
end

-- counts of n draws (and the largest id seen outside `allowed`, if any)
local function draw_counts(sampler, logits, n, allowed)
   local counts, outside = {}, nil
   for _ = 1, n do
      local id = sampler:sample(logits)
      counts[id] = (counts[id] or 0) + 1
      if allowed and not allowed[id] then outside = id end
   end
   return counts, outside
end

local function assert_distribution(expected, counts, n, tol)
   for i = 1, #expected do
      local got = (counts[i] or 0) / n
      assert.is_true(math.abs(got - expected[i]) <= tol,
                     ('id %d: expected frequency %.4f, got %.4f over %d draws'):format(i, expected[i], got, n))
   end
   for id in pairs(counts) do assert.is_true(id >= 1 and id <= #expected, 'id out of range: ' .. id) end
end

-- V logits from randn, as a tensor and its float32 values
local function random_logits(V, scale)
   local t = fnn.randn(V) * (scale or 2)
   return t, t:to_flat()
end

describe('nn.Sampler', function()
   it('temperature 0 is the argmax (the first of equal maxima) in every accepted shape, drawing nothing', function()
      fnn.manual_seed(1)
      local s = nn.Sampler():temperature(0)
      for _, x in ipairs{{0.5, 2, -1, 2, 1}, {3, 3, 3}, {-inf, -5, -inf}, {7}, {-1, -2, -0.5, -0.5}} do
         local want = argmax(x)
         local t = fnn.tensor(x)
         assert.equals(want, s:sample(t))
         assert.equals(want, s:sample(t:reshape(1, #x)))
         assert.equals(want, s:sample(t:reshape(1, 1, #x)))
      end
      -- a strided view (a column of a [V, 2] matrix)
      local m, mv = random_logits(14)
      local col = m:reshape(7, 2):select(2, 2)
      local cv = {}
      for i = 1, 7 do cv[i] = mv[2 * i] end
      assert.equals(argmax(cv), s:sample(col))
      -- greedy takes no random number: the stream continues as if nothing was drawn
      fnn.manual_seed(9); local u = C.fnn_random_uniform()
      fnn.manual_seed(9); s:sample(fnn.tensor{1, 2, 3}); assert.equals(u, C.fnn_random_uniform())
   end)

   it('draws one U[0,1) from the thread\'s random source and picks what the reference picks', function()
      local configs = {
         {t = 1}, {t = 0.5}, {t = 2.5}, {t = 1, k = 1}, {t = 1, k = 3}, {t = 0.7, k = 12},
         {t = 1, p = 0.5}, {t = 1.3, p = 0.9}, {t = 1, p = 0.05}, {t = 0.8, k = 4, p = 0.6},
         {t = 1, k = 20, p = 1},
      }
      fnn.manual_seed(3)
      for ci, cfg in ipairs(configs) do
         local s = nn.Sampler():temperature(cfg.t)
         if cfg.k then s:top_k(cfg.k) end
         if cfg.p then s:top_p(cfg.p) end
         for trial = 1, 25 do
            local logits, x = random_logits(9)
            local seed = 1000 * ci + trial
            fnn.manual_seed(seed)
            local u = C.fnn_random_uniform()
            fnn.manual_seed(seed)
            local got = s:sample(logits)
            assert.equals(pick_ref(x, cfg.t, cfg.k, cfg.p, u), got,
                          ('config %d trial %d'):format(ci, trial))
            -- exactly one draw: the stream's next number is the second one after the seed
            local second = C.fnn_random_uniform()
            fnn.manual_seed(seed); C.fnn_random_uniform()
            assert.equals(C.fnn_random_uniform(), second)
         end
      end
   end)

   it('picks what the reference picks over large vocabularies (every selection path of the kernel)', function()
      -- top_k: a heap for small k, partitioning for large; top_p: the best 64 first, then 8x more
      -- while the nucleus is larger (a flat distribution), then the whole row
      for ci, cfg in ipairs{{k = 5}, {k = 300}, {k = 999}, {p = 0.3}, {p = 0.9}, {p = 0.99}, {k = 400, p = 0.9},
                            {t = 0.3, p = 0.95}} do
         local s = nn.Sampler():temperature(cfg.t or 1)
         if cfg.k then s:top_k(cfg.k) end
         if cfg.p then s:top_p(cfg.p) end
         for trial, scale in ipairs{0.3, 1, 3, 'group'} do
            fnn.manual_seed(ci * 10 + trial)
            local logits, x
            if scale == 'group' then
               -- 50 tokens 5 above the rest, scattered: a nucleus of tens, cut inside the first 64
               x = (fnn.randn(1000) * 0.1):to_flat()
               local perm = fnn.randperm(1000):to_flat()
               for r = 1, 50 do x[perm[r]] = x[perm[r]] + 5 end
               logits = fnn.tensor(x)
               x = logits:to_flat()
            else
               logits, x = random_logits(1000, scale)
            end
            for r = 1, 10 do
               local seed = 7000 + 100 * ci + 10 * trial + r
               fnn.manual_seed(seed)
               local u = C.fnn_random_uniform()
               fnn.manual_seed(seed)
               assert.equals(pick_ref(x, cfg.t or 1, cfg.k, cfg.p, u), s:sample(logits),
                             ('config %d logits %s draw %d'):format(ci, tostring(scale), r))
            end
         end
      end
   end)

   it('matches softmax(logits / t) over many draws', function()
      local logits = fnn.tensor{1.0, 0.2, -0.5, 1.6, 0.0}
      local x = logits:to_flat()
      local n = 20000
      for _, t in ipairs{1, 0.5, 2} do
         fnn.manual_seed(11)
         local counts = draw_counts(nn.Sampler():temperature(t), logits, n)
         -- the softmax written out here
         local e, total = {}, 0
         for i = 1, #x do e[i] = math.exp(x[i] / t); total = total + e[i] end
         for i = 1, #x do e[i] = e[i] / total end
         assert_distribution(e, counts, n, 0.015)
      end
   end)

   it('top_k never returns an id outside the k best, and weighs those by their renormalised softmax', function()
      fnn.manual_seed(5)
      local logits, x = random_logits(20, 1)
      local order = {}
      for i = 1, #x do order[i] = i end
      table.sort(order, function(a, b) return x[a] > x[b] end)
      for _, k in ipairs{1, 2, 5} do
         local allowed = {}
         for r = 1, k do allowed[order[r]] = true end
         local n = 6000
         local counts, outside = draw_counts(nn.Sampler():top_k(k), logits, n, allowed)
         assert.is_nil(outside, ('top_k %d drew id %s outside the %d best'):format(k, tostring(outside), k))
         assert_distribution(probs_ref(x, 1, k), counts, n, 0.025)
      end
      -- logits equal to the k-th largest stay (HF's top-k): ids 2, 4 and 5 for k = 2, never 1 or 3
      local counts = draw_counts(nn.Sampler():top_k(2), fnn.tensor{0, 2, 1, 2, 2}, 3000)
      assert.is_nil(counts[1]); assert.is_nil(counts[3])
      for _, id in ipairs{2, 4, 5} do assert.is_true((counts[id] or 0) > 800) end
      -- k above the vocabulary keeps everything
      assert_distribution(probs_ref(x, 1), draw_counts(nn.Sampler():top_k(1000), logits, 6000), 6000, 0.025)
   end)

   it('top_p never returns an id outside the nucleus, with and without top_k', function()
      local logits = fnn.tensor{2.0, 1.5, 0.3, -0.4, 1.0, -2.0, 0.9}
      local x = logits:to_flat()
      -- the nucleus by hand: sorted probabilities, the fewest whose mass reaches p
      local e, total = {}, 0
      for i = 1, #x do e[i] = math.exp(x[i]); total = total + e[i] end
      local order = {}
      for i = 1, #x do order[i] = i end
      table.sort(order, function(a, b) return x[a] > x[b] end)
      for _, p in ipairs{0.2, 0.5, 0.75, 0.95} do
         local nucleus, mass = {}, 0
         for _, i in ipairs(order) do
            if mass >= p then break end
            nucleus[i] = true
            mass = mass + e[i] / total
         end
         local n = 5000
         fnn.manual_seed(21)
         local counts, outside = draw_counts(nn.Sampler():top_p(p), logits, n, nucleus)
         assert.is_nil(outside, ('top_p %g drew id %s outside the nucleus'):format(p, tostring(outside)))
         for i in pairs(nucleus) do assert.is_true((counts[i] or 0) > 0, 'nucleus id never drawn: ' .. i) end
         assert_distribution(probs_ref(x, 1, nil, p), counts, n, 0.025)
      end
      -- top_k first, then the nucleus of the renormalised k best
      fnn.manual_seed(22)
      local n = 5000
      local ref = probs_ref(x, 0.8, 3, 0.7)
      local allowed = {}
      for i = 1, #ref do if ref[i] > 0 then allowed[i] = true end end
      local counts, outside = draw_counts(nn.Sampler{temperature = 0.8, top_k = 3, top_p = 0.7}, logits, n, allowed)
      assert.is_nil(outside)
      assert_distribution(ref, counts, n, 0.025)
      -- a tiny p keeps only the best token
      local _, o2 = draw_counts(nn.Sampler():top_p(1e-6), logits, 500, {[1] = true})
      assert.is_nil(o2)
   end)

   it('never draws a -inf (masked) logit', function()
      fnn.manual_seed(8)
      local counts, outside = draw_counts(nn.Sampler():temperature(3), fnn.tensor{-inf, 0, -inf, 0.5, -inf}, 2000,
                                          {[2] = true, [4] = true})
      assert.is_nil(outside)
      assert.is_true(counts[2] > 500 and counts[4] > 500)
   end)

   it('gives the same sequence for the same seed, and another for another seed', function()
      local s = nn.Sampler():temperature(0.9):top_k(6):top_p(0.95)
      local function run(seed)
         fnn.manual_seed(seed)
         local ids = {}
         for i = 1, 60 do
            local logits = fnn.randn(32)            -- the model's logits come from the same stream
            ids[i] = s:sample(logits)
         end
         return ids
      end
      local a, b, c = run(42), run(42), run(43)
      assert.same(a, b)
      assert.are_not.same(a, c)
   end)

   it('chains its setters, takes the same settings as a table, and prints them', function()
      local s = nn.Sampler()
      assert.equals(s, s:temperature(0.7))
      assert.equals(s, s:top_k(5))
      assert.equals(s, s:top_p(0.9))
      assert.same({temperature = 0.7, top_k = 5, top_p = 0.9}, s:settings())
      assert.same(s:settings(), nn.Sampler{temperature = 0.7, top_k = 5, top_p = 0.9}:settings())
      assert.same({temperature = 1, top_p = 1}, nn.Sampler():settings())
      assert.same({temperature = 1, top_p = 1}, s:top_k(nil):top_p(nil):temperature(1):settings())
      assert.equals('nn.Sampler(temperature=0.7, top_k=5, top_p=0.9)', tostring(nn.Sampler{temperature = 0.7,
         top_k = 5, top_p = 0.9}))
   end)

   it('refuses bad settings and bad logits with a clear message at the caller\'s line', function()
      local s = nn.Sampler()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() s:temperature(-1) end)
      assert.equals(('spec/decoding_spec.lua:%d: Sampler: temperature is -1, expected a finite number >= 0 '
                     .. '(0 is greedy)'):format(line), err)
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = nn.Sampler{top_k = 2.5} end)
      assert.equals(('spec/decoding_spec.lua:%d: Sampler: top_k is 2.5, expected a whole number >= 1 (nil turns '
                     .. 'it off)'):format(line), err)
      assert.matches('Sampler: top_k is 0, expected a whole number >= 1', err_of(function() s:top_k(0) end))
      assert.matches('Sampler: top_p is 0, expected a number in %(0, 1%]', err_of(function() s:top_p(0) end))
      assert.matches('Sampler: top_p is 1.5, expected', err_of(function() s:top_p(1.5) end))
      assert.matches('Sampler: temperature is %-?nan', err_of(function() s:temperature(0 / 0) end))
      assert.matches('Sampler: temperature is inf', err_of(function() s:temperature(inf) end))
      assert.matches("Sampler: unknown option 'topk' %(options: top_k, ", err_of(function() local _ = nn.Sampler{topk = 3} end))
      -- logits
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = s:sample(fnn.zeros(2, 5)) end)
      assert.equals(('spec/decoding_spec.lua:%d: Sampler:sample: logits [2,5] hold 2 positions; pass the last '
                     .. 'one ([V], [1, V] or [1, 1, V], e.g. logits:narrow(1, 2, 1))'):format(line), err)
      assert.matches('logits %[1,4,5%] hold 4 positions; .*logits:narrow%(2, 4, 1%)',
                     err_of(function() local _ = s:sample(fnn.zeros(1, 4, 5)) end))
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = s:sample(fnn.zeros(3, 1, 5)) end)
      assert.equals(('spec/decoding_spec.lua:%d: sample: logits [3,1,5] are not one position\'s logits ([V], '
                     .. '[1, V] or [1, 1, V] with V >= 1)'):format(line), err)
      assert.matches('sample: logits %[1,1,1,5%] are not one position\'s logits',
                     err_of(function() local _ = s:sample(fnn.zeros(1, 1, 1, 5)) end))
      assert.matches('sample: logits %[0%] are not', err_of(function() local _ = s:sample(fnn.zeros(0)) end))
      assert.matches('sample: logits %[%] are not', err_of(function() local _ = s:sample(fnn.tensor(1)) end))
      assert.matches('sample: expected a float32 tensor, got an int64 tensor %[3%]',
                     err_of(function() local _ = s:sample(fnn.long{1, 2, 3}) end))
      assert.matches('sample: logit 2 of %[3%] is nan',
                     err_of(function() local _ = s:sample(fnn.tensor{1, 0 / 0, 3}) end))
      assert.matches('sample: logit 3 of %[3%] is inf',
                     err_of(function() local _ = s:sample(fnn.tensor{1, 2, inf}) end))
      assert.matches('sample: every logit of %[2%] is %-inf',
                     err_of(function() local _ = s:sample(fnn.tensor{-inf, -inf}) end))
      assert.matches('Sampler:sample: logits are a table, expected a tensor',
                     err_of(function() local _ = s:sample({1, 2}) end))
   end)
end)

-- ---------------------------------------------------------------------------
-- Markov toy models: P[a][b] = p(next = b | last = a); step returns the float32 log row

-- a step function over a table of float32 log-probability rows (and those rows' exact values)
local function markov(P)
   local rows, vals = {}, {}
   for a = 1, #P do
      local l = {}
      for b = 1, #P[a] do l[b] = P[a][b] > 0 and math.log(P[a][b]) or -inf end
      rows[a] = fnn.tensor(l)
      vals[a] = rows[a]:to_flat()
   end
   local calls = 0
   local function step(seq)
      calls = calls + 1
      return rows[seq[#seq]]
   end
   return step, vals, function() return calls end
end

-- a random row-stochastic V x V table from Park-Miller's generator (exact in doubles; the spec fixes its own numbers)
local function random_table(V, seed)
   local s = seed
   local function rnd()
      s = (s * 16807) % 2147483647
      return s / 2147483647
   end
   for _ = 1, 4 do rnd() end                 -- small seeds start small: move away from them
   local P = {}
   for a = 1, V do
      local row, total = {}, 0
      for b = 1, V do row[b] = 0.05 + rnd() ^ 2; total = total + row[b] end
      for b = 1, V do row[b] = row[b] / total end
      P[a] = row
   end
   return P
end

-- every continuation of `prefix` (ending at eos, or max_len long without it) scored as
-- logprob / len^alpha: the best ids (prefix included) and score
local function exhaustive(vals, prefix, eos, max_len, alpha)
   local best_seq, best_score
   local seq = {}
   for i, v in ipairs(prefix) do seq[i] = v end
   local function visit(logp, len)
      local row = vals[seq[#seq]]
      for b = 1, #row do
         if row[b] > -inf then
            local lp = logp + row[b]
            seq[#seq + 1] = b
            if b == eos or len + 1 == max_len then
               local score = lp / (len + 1) ^ alpha
               if not best_score or score > best_score then
                  best_score = score
                  best_seq = {}
                  for i, v in ipairs(seq) do best_seq[i] = v end
               end
            else
               visit(lp, len + 1)
            end
            seq[#seq] = nil
         end
      end
   end
   visit(0, 0)
   return best_seq, best_score
end

-- greedy decoding written here: the argmax (first of equal maxima) until eos or max_len
local function greedy(step, prefix, eos, max_len)
   local seq, logp = {}, 0
   for i, v in ipairs(prefix) do seq[i] = v end
   for _ = 1, max_len do
      local copy = {}
      for i, v in ipairs(seq) do copy[i] = v end
      local row = step(copy):to_flat()
      local id = argmax(row)
      seq[#seq + 1] = id
      logp = logp + row[id]
      if id == eos then break end
   end
   return seq, logp
end

describe('nn.BeamSearch', function()
   it('with width 1 is greedy decoding', function()
      for seed = 1, 12 do
         local V = 3 + seed % 4
         local step = markov(random_table(V, seed))
         for _, eos in ipairs{V, 2, false} do
            local want, want_lp = greedy(step, {1}, eos, 7)
            for _, alpha in ipairs{0, 1, 2} do   -- whatever the length penalty
               local bs = nn.BeamSearch{width = 1, max_len = 7, eos = eos or nil, length_penalty = alpha}
               local ids, score = bs:search(step, {1})
               assert.same(want, ids)
               local len = #ids - 1
               assert.is_true(math.abs(score - want_lp / len ^ alpha) <= 1e-12)
            end
         end
      end
      -- exact ties: the smaller id wins, as argmax's first maximum
      for _, P in ipairs{{{0.25, 0.25, 0.25, 0.25}, {0.1, 0.45, 0.45, 0}, {0.2, 0.2, 0.2, 0.4}, {0.5, 0, 0, 0.5}},
                         {{0, 0.5, 0.5}, {0.5, 0, 0.5}, {0.5, 0.5, 0}}} do
         local step = markov(P)
         local want = greedy(step, {1}, #P, 6)
         assert.same(want, (nn.BeamSearch{width = 1, max_len = 6, eos = #P, length_penalty = 0}:search(step, {1})))
         assert.same(want, (nn.BeamSearch{width = 1, max_len = 6, length_penalty = 0}:search(step, {1})))
      end
   end)

   it('finds what exhaustive search finds where greedy goes wrong', function()
      -- 1 = start, 2 = A, 3 = B, 4 = eos. Greedy takes A (0.55) and then A, A; B then eos is 0.405
      local P = {
         {0, 0.55, 0.45, 0},
         {0, 0.36, 0.34, 0.30},
         {0, 0.05, 0.05, 0.90},
         {0.25, 0.25, 0.25, 0.25},
      }
      local step, vals = markov(P)
      for _, alpha in ipairs{0, 1} do
         local want, want_score = exhaustive(vals, {1}, 4, 3, alpha)
         assert.same({1, 3, 4}, want)                                  -- the table is what this test says
         assert.same({1, 2, 2, 2}, (greedy(step, {1}, 4, 3)))
         local bs = nn.BeamSearch{width = 2, max_len = 3, eos = 4, length_penalty = alpha}
         local ids, score, hyps = bs:search(step, {1})
         assert.same(want, ids)
         assert.equals(want_score, score)
         assert.is_true(#hyps <= 2)
      end
   end)

   it('keeps a beam open while a longer hypothesis could still win under the length penalty', function()
      -- 1 = start, 2 = A, 3 = eos. eos first is the most probable (0.8), but with length_penalty 1
      -- ten A score ln(0.2 * 0.99^9) / 10 = -0.17 against ln(0.8) / 1 = -0.22. After one step the
      -- live beam's ln(0.2) / 2 is below -0.22: only the bound at max_len keeps it open
      local step, vals = markov({{0, 0.2, 0.8}, {0, 0.99, 0.01}, {1 / 3, 1 / 3, 1 / 3}})
      local tens = {1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}
      assert.same(tens, (exhaustive(vals, {1}, 3, 10, 1)))
      assert.same(tens, (nn.BeamSearch{width = 2, max_len = 10, eos = 3, length_penalty = 1}:search(step, {1})))
      -- width 1 is greedy under any penalty: eos, the best first token, ends it
      assert.same({1, 3}, (greedy(step, {1}, 3, 10)))
      assert.same({1, 3}, (nn.BeamSearch{width = 1, max_len = 10, eos = 3, length_penalty = 1}:search(step, {1})))
      -- without the penalty the first, most probable hypothesis wins
      assert.same({1, 3}, (exhaustive(vals, {1}, 3, 10, 0)))
      assert.same({1, 3}, (nn.BeamSearch{width = 2, max_len = 10, eos = 3, length_penalty = 0}:search(step, {1})))
   end)

   it('agrees with exhaustive search on random tables at full width, with and without length penalty', function()
      local changed = 0
      for seed = 1, 8 do
         local V, max_len = 4, 4
         local step, vals = markov(random_table(V, 100 + seed))
         local eos = 1 + seed % V
         local first
         for _, alpha in ipairs{0, 0.6, 1, 2, -0.5} do
            local want, want_score = exhaustive(vals, {1}, eos, max_len, alpha)
            local bs = nn.BeamSearch{width = V ^ max_len, max_len = max_len, eos = eos, length_penalty = alpha}
            local ids, score, hyps = bs:search(step, {1})
            assert.same(want, ids)
            assert.equals(want_score, score)
            -- hypotheses best first, each scored as logprob / len^alpha from the table
            for h = 1, #hyps do
               local hyp = hyps[h]
               if h > 1 then assert.is_true(hyps[h - 1].score >= hyp.score) end
               local lp = 0
               for i = 2, #hyp.ids do lp = lp + vals[hyp.ids[i - 1]][hyp.ids[i]] end
               assert.equals(#hyp.ids - 1, hyp.len)
               assert.is_true(math.abs(lp - hyp.logprob) <= 1e-12)
               assert.equals(hyp.logprob / hyp.len ^ alpha, hyp.score)
            end
            first = first or want
            if not same_ids(first, want) then changed = changed + 1 end
         end
      end
      -- the penalty changed the winner somewhere, so both scorings were really exercised
      assert.is_true(changed > 0)
   end)

   it('returns the prefix and the generated ids, runs to max_len without eos, takes [1, V] rows and tensors', function()
      local step, vals = markov(random_table(5, 7))
      -- width V^(max_len - 1) keeps every prefix, so the search is exact
      local ids, score = nn.BeamSearch{width = 125, max_len = 4}:search(step, {2, 1})
      assert.equals(6, #ids)
      assert.same({2, 1}, {ids[1], ids[2]})
      local want, want_score = exhaustive(vals, {2, 1}, nil, 4, 1)
      assert.same(want, ids)
      assert.equals(want_score, score)
      -- the same search through [1, V] and [1, 1, V] rows, and a prefix given as an int64 tensor
      local function step2(seq) return step(seq):reshape(1, 5) end
      local function step3(seq) return step(seq):reshape(1, 1, 5) end
      local bs = nn.BeamSearch{width = 125, max_len = 4}
      assert.same(ids, (bs:search(step2, {2, 1})))
      assert.same(ids, (bs:search(step3, fnn.long{2, 1})))
      -- step sees a fresh array each call: changing it does not change the search
      local function vandal(seq) local r = step(seq); seq[1] = 99; return r end
      assert.same(ids, (bs:search(vandal, {2, 1})))
   end)

   it('stops early once no live beam can beat the finished ones', function()
      -- from 1 the end token 2 is near certain: after one step nothing can beat {1, 2}
      local step, _, calls = markov({{0.001, 0.998, 0.001}, {1 / 3, 1 / 3, 1 / 3}, {0.001, 0.998, 0.001}})
      local ids = nn.BeamSearch{width = 2, max_len = 50, eos = 2, length_penalty = 0}:search(step, {1})
      assert.same({1, 2}, ids)
      assert.is_true(calls() <= 3)
   end)

   it('refuses bad options, steps and prefixes with a clear message at the caller\'s line', function()
      local line = debug.getinfo(1, 'l').currentline + 1
      local err = err_of(function() local _ = nn.BeamSearch{width = 0} end)
      assert.equals(('spec/decoding_spec.lua:%d: BeamSearch: width is 0, expected a whole number >= 1'):format(line),
                    err)
      assert.matches('BeamSearch: max_len is 2.5, expected a whole number >= 1',
                     err_of(function() local _ = nn.BeamSearch{max_len = 2.5} end))
      assert.matches('BeamSearch: eos is 0, expected a 1%-based token id',
                     err_of(function() local _ = nn.BeamSearch{eos = 0} end))
      assert.matches('BeamSearch: length_penalty is %-?nan, expected a finite number',
                     err_of(function() local _ = nn.BeamSearch{length_penalty = 0 / 0} end))
      assert.matches("BeamSearch: unknown option 'beam_width' %(options: ",
                     err_of(function() local _ = nn.BeamSearch{beam_width = 3} end))
      local bs = nn.BeamSearch{width = 2, max_len = 5, eos = 3}
      -- a step whose vocabulary changes after the first call
      local function shrinking(seq) return fnn.zeros(#seq > 1 and 4 or 5):log_softmax() end
      line = debug.getinfo(1, 'l').currentline + 1
      err = err_of(function() local _ = bs:search(shrinking, {1}) end)
      assert.equals(('spec/decoding_spec.lua:%d: BeamSearch:search: step returned [4] for a sequence of 2 ids, '
                     .. 'expected 5 log-probabilities like its first result (the vocabulary size)'):format(line), err)
      assert.matches('BeamSearch:search: step returned %[2,5%] for a sequence of 1 ids, expected next%-token '
                     .. 'log%-probabilities %[V%]',
                     err_of(function() local _ = bs:search(function() return fnn.zeros(2, 5) end, {1}) end))
      assert.matches('BeamSearch:search: step returned a nil for a sequence of 1 ids, expected a tensor',
                     err_of(function() local _ = bs:search(function() end, {1}) end))
      assert.matches('step returned an int64 tensor %[5%], expected float32',
                     err_of(function() local _ = bs:search(function() return fnn.long{1, 2, 3, 4, 5} end, {1}) end))
      assert.matches('step returned %[3%] for a sequence of 1 ids with log%-probability 0.5 for id 2; expected '
                     .. 'log%-probabilities %(<= 0: x:log_softmax%(%)%)',
                     err_of(function() local _ = bs:search(function() return fnn.tensor{0.2, 0.5, 0.3} end, {1}) end))
      assert.matches('BeamSearch:search: eos is 3 but step\'s log%-probabilities %[2%] cover ids 1..2',
                     err_of(function() local _ = bs:search(function() return fnn.zeros(2):log_softmax() end) end))
      assert.matches('BeamSearch:search: step is a number, expected a function',
                     err_of(function() local _ = bs:search(3) end))
      assert.matches('BeamSearch:search: prefix id 2 is 0, expected a whole number >= 1',
                     err_of(function() local _ = bs:search(function() end, {1, 0}) end))
      assert.matches('BeamSearch:search: prefix %[2,2%] is not a 1%-d tensor of ids',
                     err_of(function() local _ = bs:search(function() end, fnn.ones(2, 2)) end))
      assert.matches('BeamSearch:search: no hypothesis',
                     err_of(function() local _ = bs:search(function() return fnn.tensor{-inf, -inf, -inf} end) end))
   end)
end)
