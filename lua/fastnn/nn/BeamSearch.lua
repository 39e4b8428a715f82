-- nn.BeamSearch{width = 4, max_len = 20, eos = nil, length_penalty = 1}: beam search over a step function.
--   local bs = nn.BeamSearch{width = 4, max_len = 32, eos = eos_id}
--   local ids, score, hyps = bs:search(function(seq) return next_logprobs(seq) end, prefix)
-- step(seq) gets a fresh Lua array of 1-based ids (the prefix, then what this hypothesis has
-- generated so far) and returns next-token log-probabilities: a float32 tensor [V] ([1, V] and
-- [1, 1, V] also do; e.g. the last position's x:log_softmax()), with the same V every call.
-- search returns the best sequence (a Lua array: the prefix, then the generated ids, eos included
-- when it ended there), its score, and the kept hypotheses best first ({ids, score, logprob, len}).
-- prefix: a Lua array of ids or a 1-d int64 tensor; nil or {} starts from nothing.
--
-- Standard beam search (Hugging Face's BeamSearchScorer): each step extends every live beam by its
-- 2*width best tokens, ranks all the extensions by total log-probability (ties: the better beam,
-- then the smaller id), and keeps the `width` best that do not end in eos; an extension ending in
-- eos among the `width` best becomes a finished hypothesis. Finished hypotheses, and the beams still
-- live after max_len generated ids, are scored as Hugging Face does:
--   score = logprob / len ^ length_penalty      len = ids generated after the prefix, eos included
-- length_penalty 0 scores the plain log-probability (the most probable sequence); above 0 it favours
-- longer ones, below 0 shorter ones. max_len counts generated ids, not the prefix. The search stops
-- when `width` hypotheses have finished and no live beam can beat the worst of them any more (an
-- exact bound: log-probabilities only fall, and with length_penalty > 0 the most lenient length is
-- max_len), when no beam is left, or after max_len steps. Width 1 is greedy decoding whatever the
-- penalty (the argmax each step, the first of equal maxima, until eos or max_len), as Hugging Face's
-- num_beams = 1.
-- Not a Module: it has no parameters, only its four settings.
local show_value = require('fastnn.options').show   -- a value in a message: never an address
local ffi = require 'ffi'
local fnn_tensor = require 'fastnn.tensor'
local C = fnn_tensor.C
local new, istype, shape_str = fnn_tensor.new, fnn_tensor.is_tensor, fnn_tensor.shape_str
local too_many = fnn_tensor.too_many   -- an argument past the last is refused, never dropped
local floor, huge = math.floor, math.huge

local BeamSearch = require('fastnn.class')('BeamSearch')

local OPTS = require('fastnn.options').declare('nn.BeamSearch', {
   {'width', 'integer', 4, 'beams kept at each step', min = 1},
   {'max_len', 'integer', 20, 'ids generated after the prefix', min = 1},
   {'eos', 'integer', nil, 'the 1-based end token id (nil: none)', min = 1},
   {'length_penalty', 'number', 1, "scores divided by length^alpha (0: none)"},
})

local function whole(v, min) return type(v) == 'number' and v == floor(v) and v >= min and v <= 2 ^ 53 end

function BeamSearch.__new(cls, opts, extra)
   if extra ~= nil then too_many('nn.BeamSearch', 2, extra, 'opts') end
   if opts == nil then opts = {} end
   if type(opts) ~= 'table' then
      error(('BeamSearch: options are a table like {width = 4, max_len = 20, eos = 3, length_penalty = 1}, '
             .. 'got a %s'):format(type(opts)), 2)
   end
   for k in pairs(opts) do   -- names through the declaration; values through the checks below
      if OPTS.by_name[k] == nil then OPTS:check({[k] = true}, 2) end
   end
   local width = opts.width == nil and 4 or opts.width
   local max_len = opts.max_len == nil and 20 or opts.max_len
   local alpha = opts.length_penalty == nil and 1 or opts.length_penalty
   if not whole(width, 1) then
      error(('BeamSearch: width is %s, expected a whole number >= 1'):format(show_value(width)), 2)
   end
   if not whole(max_len, 1) then
      error(('BeamSearch: max_len is %s, expected a whole number >= 1 (ids generated after the prefix)'):format(
         show_value(max_len)), 2)
   end
   if opts.eos ~= nil and not whole(opts.eos, 1) then
      error(('BeamSearch: eos is %s, expected a 1-based token id (or nil: no end token)'):format(
         show_value(opts.eos)), 2)
   end
   if type(alpha) ~= 'number' or alpha ~= alpha or alpha == huge or alpha == -huge then
      error(('BeamSearch: length_penalty is %s, expected a finite number (0: none)'):format(show_value(alpha)), 2)
   end
   return setmetatable({width = width, max_len = max_len, eos = opts.eos, length_penalty = alpha}, cls)
end

-- the prefix as a fresh Lua array of ids, or nil and why
local function read_prefix(prefix)
   if prefix == nil then return {} end
   if istype(prefix) then
      if prefix.ndim ~= 1 then
         return nil, ('prefix %s is not a 1-d tensor of ids'):format(shape_str(prefix))
      end
      prefix = prefix:to_flat()
   end
   if type(prefix) ~= 'table' then
      return nil, ('prefix is a %s, expected a Lua array of 1-based ids (or nil)'):format(type(prefix))
   end
   local seq = {}
   for i = 1, #prefix do
      if not whole(prefix[i], 1) then
         return nil, ('prefix id %d is %s, expected a whole number >= 1'):format(i, tostring(prefix[i]))
      end
      seq[i] = prefix[i]
   end
   return seq
end

local function copy(seq, extra)
   local r = {}
   for i = 1, #seq do r[i] = seq[i] end
   if extra then r[#r + 1] = extra end
   return r
end

-- one step result -> its V, with its `k` best log-probabilities and ids (1-based) in vals/ids
-- (best first); or nil and why. V0: the first result's V (nil on the first call)
local values_h, ids_h = new(), new()
local function read_step(lp, nseq, k, V0, vals, ids)
   if not istype(lp) then
      return nil, ('step returned a %s for a sequence of %d ids, expected a tensor of log-probabilities [V]'):format(
         type(lp), nseq)
   end
   local nd = lp.ndim
   local one_row = nd >= 1 and nd <= 3
   for d = 0, nd - 2 do one_row = one_row and lp.shape_[d] == 1 end
   if not one_row or lp.shape_[nd - 1] < 1 then
      return nil, ('step returned %s for a sequence of %d ids, expected next-token log-probabilities [V] '
                   .. '([1, V] or [1, 1, V])'):format(shape_str(lp), nseq)
   end
   if lp.dtype_ ~= 0 then
      return nil, ('step returned an int64 tensor %s, expected float32 log-probabilities'):format(shape_str(lp))
   end
   local V = tonumber(lp.shape_[nd - 1])
   if V0 and V ~= V0 then
      return nil, ('step returned %s for a sequence of %d ids, expected %d log-probabilities like its first '
                   .. 'result (the vocabulary size)'):format(shape_str(lp), nseq, V0)
   end
   if k > V then k = V end
   if C.fnn_topk(values_h, ids_h, lp, k, -1, 1) ~= 0 then return nil, fnn_tensor.last_error() end
   local rc = C.fnn_copy_to_doubles(values_h, vals, k)
   if rc == 0 then rc = C.fnn_copy_to_doubles(ids_h, ids, k) end
   C.fnn_tensor_clear(values_h)
   C.fnn_tensor_clear(ids_h)
   if rc ~= 0 then return nil, fnn_tensor.last_error() end
   local top = vals[0]
   if top ~= top or top > 1e-4 then
      return nil, ('step returned %s for a sequence of %d ids with log-probability %s for id %d; expected '
                   .. 'log-probabilities (<= 0: x:log_softmax())'):format(shape_str(lp), nseq, tostring(top), ids[0])
   end
   return V, k
end

-- insert h into hyps (best score first, earlier first among equals), keeping at most width
local function add_hyp(hyps, width, h)
   local at = #hyps + 1
   while at > 1 and hyps[at - 1].score < h.score do at = at - 1 end
   if at > width then return end
   table.insert(hyps, at, h)
   if #hyps > width then hyps[#hyps] = nil end
end

-- bs:search(step, prefix) -> ids (prefix included), score, hyps
function BeamSearch:search(step, prefix, extra)
   if extra ~= nil then too_many('BeamSearch:search', 3, extra, 'step, prefix') end
   local mt = getmetatable(step)
   if type(step) ~= 'function' and not (mt and mt.__call) then
      error(('BeamSearch:search: step is a %s, expected a function seq -> log-probabilities [V]'):format(
         type(step)), 2)
   end
   local start, why = read_prefix(prefix)
   if not start then error('BeamSearch:search: ' .. why, 2) end
   local width, max_len, eos, alpha = self.width, self.max_len, self.eos, self.length_penalty
   local kmax = 2 * width
   local vals, ids = ffi.new('double[?]', kmax), ffi.new('double[?]', kmax)
   local beams = {{seq = start, logp = 0}}
   local hyps = {}
   local V
   local cb, cid, clp, order = {}, {}, {}, {}   -- candidates: beam, id, total log-probability
   local function better(a, b)
      if clp[a] ~= clp[b] then return clp[a] > clp[b] end
      if cb[a] ~= cb[b] then return cb[a] < cb[b] end
      return cid[a] < cid[b]
   end
   local stopped = false
   for t = 1, max_len do
      local n = 0
      for b = 1, #beams do
         local beam = beams[b]
         local lp = step(copy(beam.seq))
         local v, k = read_step(lp, #beam.seq, kmax, V, vals, ids)
         if not v then error('BeamSearch:search: ' .. k, 2) end
         if not V then
            V = v
            if eos and eos > V then
               error(('BeamSearch:search: eos is %d but step\'s log-probabilities %s cover ids 1..%d'):format(
                  eos, shape_str(lp), V), 2)
            end
         end
         for r = 0, k - 1 do
            local x = vals[r]
            if x == -huge then break end            -- impossible tokens (best first: the rest are too)
            n = n + 1
            cb[n], cid[n], clp[n], order[n] = b, ids[r], beam.logp + x, n
         end
      end
      for r = #order, n + 1, -1 do order[r] = nil end
      table.sort(order, better)
      local live = {}
      for r = 1, n do
         local c = order[r]
         local seq = beams[cb[c]].seq
         if cid[c] == eos then
            if r <= width then
               add_hyp(hyps, width, {ids = copy(seq, eos), logprob = clp[c], len = t,
                                     score = clp[c] / t ^ alpha})
            end
            if width == 1 then break end   -- width 1 is greedy decoding: the best token, eos, ends it
         else
            live[#live + 1] = {seq = copy(seq, cid[c]), logp = clp[c]}
            if #live == width then break end
         end
      end
      beams = live
      if #beams == 0 then stopped = true; break end
      if #hyps >= width then
         -- the best score a live beam could still reach: log-probabilities only fall from here
         local best = beams[1].logp
         local bound = alpha > 0 and best / max_len ^ alpha or best / (t + 1) ^ alpha
         if hyps[#hyps].score >= bound then stopped = true; break end
      end
   end
   if not stopped then
      for _, beam in ipairs(beams) do
         add_hyp(hyps, width, {ids = beam.seq, logprob = beam.logp, len = max_len,
                               score = beam.logp / max_len ^ alpha})
      end
   end
   if #hyps == 0 then
      error('BeamSearch:search: no hypothesis: step gave every token log-probability -inf', 2)
   end
   local best = hyps[1]
   return copy(best.ids), best.score, hyps
end

function BeamSearch:__tostring()
   return ('nn.BeamSearch(width=%d, max_len=%d, eos=%s, length_penalty=%g)'):format(
      self.width, self.max_len, tostring(self.eos), self.length_penalty)
end

return BeamSearch
