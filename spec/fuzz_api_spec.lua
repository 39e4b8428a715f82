-- fuzz_api: seeded random calls over the public Lua API. Each call draws an op, layer or loader from
-- the table below and arguments for it: random shapes (sizes 0..4, 0..4 dims), dims (in and out of
-- range, negative, fractional), dtypes (float32, int64), devices ('cuda' without a GPU), numbers
-- (NaN, inf, huge, negative), nils, strings, tables, functions and freed tensors. Every call must
-- either return a tensor of the shape the op documents (computed here independently) or raise a
-- string error that names the op, raised at the caller's line (the closures below are the
-- callers; none returns its call as a tail call, which would hide its line). A crash is a crash of
-- busted: the seed is printed first.
--   FASTNN_FUZZ_SEED   the seed (default 20261201)
--   FASTNN_FUZZ_CALLS  how many calls (default 3000: a couple of seconds)
-- A failure prints `api fuzz: seed S, call K: <what was called>` and the reason; rerun with the
-- same seed to reproduce it (each call's arguments depend only on the seed and K).
local fnn = require 'fastnn'
local T = fnn.Tensor

local SEED = tonumber(os.getenv('FASTNN_FUZZ_SEED') or '') or 20261201
local CALLS = tonumber(os.getenv('FASTNN_FUZZ_CALLS') or '') or 3000
local random = math.random

-- ---- arguments ----
local function chance(p) return random() < p end
local function pick(list) return list[random(1, #list)] end

local function rshape(lo, hi)
   local s = {}
   for i = 1, random(lo or 0, hi or 3) do s[i] = chance(0.08) and 0 or random(1, 4) end
   return s
end

local FREED = setmetatable({}, {__mode = 'k'})   -- tensors this run freed on purpose

local function tensor(shape, kind)
   kind = kind or 'float'
   if kind == 'int64' then
      local n = 1
      for _, v in ipairs(shape) do n = n * v end
      return fnn.arange(1, n + 1):reshape(shape)   -- whole numbers: an int64 range
   end
   local t = fnn.randn(shape)
   if chance(0.1) and t:numel() > 0 then   -- specials inside
      local flat = t:to_flat()
      flat[random(1, #flat)] = pick({0 / 0, 1 / 0, -1 / 0, 1e38, -0.0})
      t = fnn.tensor(flat, shape)
   end
   if kind == 'freed' then t:free(); FREED[t] = true end
   return t
end

local JUNK = {'nil', 'a string', 0 / 0, 1 / 0, -1, 0, 2.5, 1e300, true, {}, {1, 2}, print, 'cuda'}
local function junk()
   local j = pick(JUNK)
   if j == 'nil' then return nil end
   return j
end

-- a tensor argument: mostly valid, sometimes int64, freed, or not a tensor at all.
-- returns the value and whether it is a valid float32 tensor
local function tensor_arg(shape)
   local r = random()
   if r < 0.86 then return tensor(shape), true end
   if r < 0.92 then return tensor(shape, 'int64'), false end
   if r < 0.96 then return tensor(shape, 'freed'), false end
   return junk(), false
end

-- a dim for a tensor of n dims: valid 1-based or negative, or out of range / not an integer
local function dim_arg(n)
   if n > 0 and chance(0.85) then
      local d = random(1, n)
      return chance(0.3) and d - n - 1 or d, true
   end
   return pick({0, n + 1, -n - 1, 1.5, 0 / 0, 'x'}), false
end

local function norm_dim(d, n) return d < 0 and d + n + 1 or d end

local function copy(s)
   local r = {}
   for i, v in ipairs(s) do r[i] = v end
   return r
end

local function broadcast(a, b)
   local n = math.max(#a, #b)
   local out = {}
   for i = 1, n do
      local x, y = a[#a - n + i] or 1, b[#b - n + i] or 1
      if x ~= y and x ~= 1 and y ~= 1 then return nil end
      out[i] = x == 1 and y or x
   end
   return out
end

-- ---- the table: name (what the error must name), make() -> call, expected shape (nil: must fail;
-- 'either': a failure is allowed, a success is checked by the shape when one is given), label ----
local ops = {}
local function op(name, make, alias) ops[#ops + 1] = {name = name, make = make, alias = alias} end

for _, name in ipairs({'relu', 'sigmoid', 'tanh', 'exp', 'abs', 'neg', 'sqrt', 'gelu', 'silu', 'softplus'}) do
   op(name, function()
      local s = rshape()
      local x, ok = tensor_arg(s)
      return function() local r = T[name](x); return r end, ok and s or 'either', {x}
   end)
end

for _, name in ipairs({'add', 'sub', 'mul', 'div', 'maximum'}) do
   op(name, function()
      local sa = rshape()
      local sb = chance(0.7) and copy(sa) or rshape()
      if chance(0.3) then   -- broadcasting: ones and dropped leading dims
         for i = 1, #sb do if chance(0.4) then sb[i] = 1 end end
         if #sb > 0 and chance(0.3) then table.remove(sb, 1) end
      end
      local a, oka = tensor_arg(sa)
      local b, okb = tensor_arg(sb)
      if chance(0.15) then b, okb, sb = pick({2, -1.5, 0 / 0}), true, {} end   -- a number operand
      local want = (oka and okb) and broadcast(sa, sb) or nil
      if not (oka and okb) then want = 'either' end   -- int64 operands are promoted (DESIGN, Dtypes)
      return function() local r = T[name](a, b); return r end, want, {a, b}
   end)
end

for _, name in ipairs({'sum', 'mean', 'prod'}) do
   op(name, function()
      local s = rshape(1, 3)
      local x, ok = tensor_arg(s)
      local d, dok = dim_arg(#s)
      local keep = chance(0.5)
      local want = nil
      if ok and dok then
         want = copy(s)
         local k = norm_dim(d, #s)
         if keep then want[k] = 1 else table.remove(want, k) end
      elseif not ok or dok then want = 'either' end
      return function() local r = T[name](x, d, keep); return r end, want, {x, d, keep}
   end)
end

op('softmax', function()
   local s = rshape(1, 3)
   local x, ok = tensor_arg(s)
   local d, dok = dim_arg(#s)
   return function() local r = fnn.softmax(x, d); return r end, (ok and dok) and s or (dok and 'either' or nil), {x, d}
end)

op('matmul', function()
   local m, k, n = random(1, 4), random(1, 4), random(1, 4)
   local k2 = chance(0.8) and k or random(1, 5)
   local a, oka = tensor_arg({m, k})
   local b, okb = tensor_arg({k2, n})
   local want = (oka and okb) and (k == k2 and {m, n} or nil) or 'either'
   return function() local r = T.matmul(a, b); return r end, want, {a, b}
end)

op('transpose', function()
   local s = rshape(2, 4)
   local x, ok = tensor_arg(s)
   local d1, ok1 = dim_arg(#s)
   local d2, ok2 = dim_arg(#s)
   local want = nil
   if ok and ok1 and ok2 then
      want = copy(s)
      local i, j = norm_dim(d1, #s), norm_dim(d2, #s)
      want[i], want[j] = s[j], s[i]
   elseif not ok and ok1 and ok2 then want = 'either' end   -- views of any dtype
   return function() local r = T.transpose(x, d1, d2); return r end, want, {x, d1, d2}
end)

op('narrow', function()
   local s = rshape(1, 3)
   local x, ok = tensor_arg(s)
   local d, dok = dim_arg(#s)
   local size = dok and s[norm_dim(d, #s)] or 2
   local start, len = random(-1, size + 2), random(-1, size + 1)
   local want = nil
   local from = start < 0 and start + size + 1 or start   -- negative from the end
   if dok and start ~= 0 and from >= 1 and len >= 0 and from + len - 1 <= size then
      want = copy(s)
      want[norm_dim(d, #s)] = len
      if not ok then want = 'either' end
   elseif not ok then want = 'either' end
   return function() local r = T.narrow(x, d, start, len); return r end, want, {x, d, start, len}
end)

op('reshape', function()
   local s = rshape(0, 3)
   local x, ok = tensor_arg(s)
   local n = 1
   for _, v in ipairs(s) do n = n * v end
   local target = chance(0.6) and {n} or rshape(0, 3)
   local m = 1
   for _, v in ipairs(target) do m = m * v end
   local want = m == n and target or nil
   if not ok then want = 'either' end
   return function() local r = T.reshape(x, target); return r end, want, {x, target}
end)

op('unsqueeze', function()
   local s = rshape(0, 3)
   local x, ok = tensor_arg(s)
   local d, dok = dim_arg(#s + 1)
   local want = nil
   if dok then
      want = copy(s)
      table.insert(want, norm_dim(d, #s + 1), 1)
      if not ok then want = 'either' end
   elseif not ok then want = 'either' end
   return function() local r = T.unsqueeze(x, d); return r end, want, {x, d}
end)

op('cat', function()
   local s = rshape(1, 3)
   local d, dok = dim_arg(#s)
   local s2 = copy(s)
   if dok and chance(0.8) then s2[norm_dim(d, #s)] = random(0, 3) end
   local a, oka = tensor_arg(s)
   local b, okb = tensor_arg(s2)
   local want = nil
   if oka and okb and dok then
      local k = norm_dim(d, #s)
      local same = true
      for i = 1, #s do if i ~= k and s[i] ~= s2[i] then same = false end end
      if same then want = copy(s); want[k] = s[k] + s2[k] end
   elseif dok then want = 'either' end
   return function() local r = fnn.cat({a, b}, d); return r end, want, {a, b, d}
end)

op('to', function()   -- devices: 'cpu' always, 'cuda' only where built and present
   local s = rshape()
   local x, ok = tensor_arg(s)
   local dev = pick({'cpu', 'cuda', 'cuda:7', 'tpu', 3})
   local want = 'either'
   if dev == 'tpu' or dev == 3 or dev == 'cuda:7' then want = nil end
   if ok and dev == 'cpu' then want = s end
   return function() local r = T.to(x, dev); return r end, want, {x, dev}
end)

op('Linear', function()
   local fin, fout = random(1, 4), random(1, 4)
   if chance(0.1) then fin = pick({0, -1, 2.5, 'x'}) end
   local n = random(1, 3)
   local x, ok = tensor_arg({n, chance(0.85) and type(fin) == 'number' and fin >= 1 and fin == math.floor(fin) and fin
                               or random(1, 5)})
   return function() local r = fnn.nn.Linear(fin, fout):forward(x); return r end,
          (ok and type(fin) == 'number' and fin >= 1 and fin == math.floor(fin) and x:size(2) == fin) and {n, fout}
          or 'either', {fin, fout, x}
end, 'linear')   -- a layer's refusal may name the layer or the op its forward runs

op('Conv2d', function()
   local cin, cout, k = random(1, 3), random(1, 3), random(1, 3)
   local h, w = random(1, 5), random(1, 5)
   local c = chance(0.85) and cin or random(1, 4)
   local x, ok = tensor_arg({random(1, 2), c, h, w})
   local want = 'either'
   if ok and c == cin then
      want = (h >= k and w >= k) and {x:size(1), cout, h - k + 1, w - k + 1} or nil
   elseif ok then want = nil end
   return function() local r = fnn.nn.Conv2d(cin, cout, k):forward(x); return r end, want, {cin, cout, k, x}
end, 'conv2d')

op('LayerNorm', function()
   local s = rshape(1, 3)
   local x, ok = tensor_arg(s)
   local f = chance(0.85) and s[#s] or random(1, 5)
   local want = 'either'
   if ok then want = (f == s[#s] and f >= 1) and s or nil end
   return function() local r = fnn.nn.LayerNorm(f):forward(x); return r end, want, {f, x}
end, 'layer_norm')

op('permute', function()
   local s = rshape(1, 4)
   local x, ok = tensor_arg(s)
   local order = {}
   for i = 1, #s do order[i] = i end
   for i = #order, 2, -1 do local j = random(1, i); order[i], order[j] = order[j], order[i] end
   local valid = true
   if chance(0.15) then order[random(1, #order)] = pick({0, #s + 1, 1.5}); valid = false end
   if chance(0.1) then order[#order + 1] = 1; valid = false end
   local want = nil
   if valid then
      want = {}
      for i, d in ipairs(order) do want[i] = s[d] end
      if not ok then want = 'either' end
   elseif not ok then want = 'either' end
   return function() local r = T.permute(x, order); return r end, want, {x, order}
end)

op('squeeze', function()
   local s = rshape(0, 4)
   for i = 1, #s do if chance(0.4) then s[i] = 1 end end
   local x, ok = tensor_arg(s)
   local want = {}
   for _, v in ipairs(s) do if v ~= 1 then want[#want + 1] = v end end
   if not ok then want = 'either' end
   return function() local r = T.squeeze(x); return r end, want, {x}
end)

op('expand', function()
   local s = rshape(1, 3)
   for i = 1, #s do if chance(0.5) then s[i] = 1 end end
   local x, ok = tensor_arg(s)
   local target, valid = {}, true
   if chance(0.3) then target[1] = random(1, 3) end   -- a new leading dim
   for i = 1, #s do
      local v = s[i] == 1 and random(1, 4) or (chance(0.2) and -1 or s[i])
      if chance(0.08) then v = s[i] + 1; if s[i] ~= 1 then valid = false end end
      target[#target + 1] = v
   end
   local want = nil
   if valid then
      want = {}
      local lead = #target - #s
      for i, v in ipairs(target) do want[i] = v == -1 and s[i - lead] or v end
      if not ok then want = 'either' end
   elseif not ok then want = 'either' end
   return function() local r = T.expand(x, target); return r end, want, {x, target}
end)

op('topk', function()
   local s = rshape(1, 3)
   local x, ok = tensor_arg(s)
   local d, dok = dim_arg(#s)
   local size = dok and s[norm_dim(d, #s)] or 1
   local k = random(-1, size + 1)
   local want = nil
   if dok and k >= 0 and k <= size then
      want = copy(s)
      want[norm_dim(d, #s)] = k
      if not ok then want = 'either' end
   elseif not ok then want = 'either' end
   return function() local r = T.topk(x, k, d); return r end, want, {x, k, d}
end)

op('index_select', function()
   local s = rshape(1, 3)
   local x, ok = tensor_arg(s)
   local d, dok = dim_arg(#s)
   local size = dok and s[norm_dim(d, #s)] or 1
   local ids, valid = {}, true
   for i = 1, random(0, 4) do
      ids[i] = random(1, math.max(size, 1))
      if size == 0 or chance(0.05) then ids[i] = pick({0, size + 1, -1}); valid = false end
   end
   local index = #ids > 0 and fnn.long(ids) or fnn.zeros({0}, {dtype = 'int64'})
   local want = nil
   if dok and valid then
      want = copy(s)
      want[norm_dim(d, #s)] = #ids
      if not ok then want = 'either' end
   elseif not ok then want = 'either' end
   return function() local r = T.index_select(x, d, index); return r end, want, {x, d, index}
end)

op('max_pool2d', function()
   local n, c, h, w = random(1, 2), random(1, 2), random(1, 6), random(1, 6)
   local x, ok = tensor_arg({n, c, h, w})
   local k = pick({1, 2, 3, 0, 2.5})
   local want = 'either'
   if ok and k >= 1 and k == math.floor(k) then
      want = (h >= k and w >= k) and {n, c, math.floor((h - k) / k) + 1, math.floor((w - k) / k) + 1} or nil
   elseif ok then want = nil end
   return function() local r = fnn.max_pool2d(x, k); return r end, want, {x, k}
end)

op('mse_loss', function()
   local s = rshape(1, 3)
   local a, oka = tensor_arg(s)
   local s2 = chance(0.85) and s or rshape(1, 3)
   local b, okb = tensor_arg(s2)
   local same = #s == #s2
   for i = 1, #s do if s[i] ~= s2[i] then same = false end end
   local want = (oka and okb) and (same and {} or nil) or 'either'   -- pred and target of one shape
   return function() local r = fnn.mse_loss(a, b); return r end, want, {a, b}
end)

op('cross_entropy', function()
   local n, c = random(1, 4), random(1, 4)
   local logits, ok = tensor_arg({n, c})
   local ids, valid = {}, true
   for i = 1, chance(0.9) and n or random(1, 5) do ids[i] = random(1, c) end
   if #ids ~= n then valid = false end
   if chance(0.08) then ids[1] = pick({0, c + 1}); valid = false end
   local targets = fnn.long(ids)
   local want = (ok and valid) and {} or (ok and nil or 'either')
   return function() local r = fnn.cross_entropy(logits, targets); return r end, want, {logits, targets}
end)

op('Embedding', function()
   local vocab, width = random(1, 5), random(1, 4)
   local s = rshape(1, 2)
   local ids, valid = {}, true
   local n = 1
   for _, v in ipairs(s) do n = n * v end
   for i = 1, n do ids[i] = random(1, vocab) end
   if n > 0 and chance(0.1) then ids[random(1, n)] = pick({0, vocab + 1, 1.5}); valid = false end
   local t = n > 0 and fnn.tensor(ids, s) or fnn.zeros(s)
   local want = valid and copy(s) or nil
   if want then want[#want + 1] = width end
   return function() local r = fnn.nn.Embedding(vocab, width):forward(t); return r end, want, {vocab, width, t}
end, 'embedding')

op('sort', function()
   local s = rshape(1, 3)
   local x, ok = tensor_arg(s)
   local d, dok = dim_arg(#s)
   local want = (ok and dok) and s or (dok and 'either' or nil)
   return function() local r = T.sort(x, d); return r end, want, {x, d}
end)

op('stack', function()
   local s = rshape(0, 3)
   local n = random(1, 3)
   local list, all_ok, same = {}, true, true
   for i = 1, n do
      local si = (i == 1 or chance(0.85)) and s or rshape(0, 3)
      if #si ~= #s then same = false else for j = 1, #s do if si[j] ~= s[j] then same = false end end end
      local t, ok = tensor_arg(si)
      list[i], all_ok = t, all_ok and ok
   end
   local d, dok = dim_arg(#s + 1)
   local want = nil
   if all_ok and dok and same then
      want = copy(s)
      table.insert(want, norm_dim(d, #s + 1), n)
   elseif not all_ok and dok then want = 'either' end
   return function() local r = fnn.stack(list, d); return r end, want, {list, d}
end)

op('pad', function()
   local s = rshape(1, 3)
   local x, ok = tensor_arg(s)
   local pads, valid = {}, true
   for i = 1, 2 * random(1, #s) do pads[i] = random(0, 2) end
   if chance(0.1) then pads[#pads + 1] = 1; valid = false end   -- an odd count
   if chance(0.05) then pads[1] = 1.5; valid = false end
   local want = nil
   if valid then
      want = copy(s)
      for i = 1, #pads / 2 do   -- pairs from the last dim backwards
         local k = #s - i + 1
         want[k] = want[k] + pads[2 * i - 1] + pads[2 * i]
      end
      if not ok then want = 'either' end
   elseif not ok then want = 'either' end
   return function() local r = T.pad(x, pads); return r end, want, {x, pads}
end)

op('where', function()
   local s = rshape(0, 3)
   local c, okc = tensor_arg(s)
   local a, oka = tensor_arg(chance(0.8) and s or rshape(0, 3))
   local b = chance(0.5) and 0 or tensor(s)
   local want = 'either'
   if okc and oka then want = broadcast(s, a:shape()) end
   return function() local r = fnn.where(c, a, b); return r end, want, {c, a, b}
end)

-- a checkpoint written and read back into a model of maybe other sizes: a mismatch is refused
local ckpt = os.tmpname()
op('load', function()
   local a, b = random(1, 3), random(1, 3)
   local a2, b2 = chance(0.7) and a or random(1, 4), chance(0.7) and b or random(1, 4)
   return function()
      fnn.save(fnn.nn.Linear(a, b), ckpt)
      local m = fnn.nn.Linear(a2, b2)
      fnn.load(m, ckpt)
      local r = m.weight:tensor()
      return r
   end, (a == a2 and b == b2) and {b, a} or nil, {a, b, a2, b2}
end)

-- loaders over random bytes: a refusal names the file (they have no op to name but the path)
local tmp = os.tmpname()
local function random_bytes(n)
   local b = {}
   for i = 1, n do b[i] = string.char(random(0, 255)) end
   return table.concat(b)
end
local function write_tmp(bytes)
   local f = assert(io.open(tmp, 'wb'))
   f:write(bytes)
   f:close()
end
op('load_safetensors', function()
   local hdr = '{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
   local body = chance(0.5) and random_bytes(random(0, 40))
      or string.char(#hdr, 0, 0, 0, 0, 0, 0, 0) .. hdr .. random_bytes(random(6, 10))
   return function() write_tmp(body); local r = fnn.load_safetensors(tmp); return r.x end,
          'either', {('%d bytes'):format(#body)}
end)
op('TextDataset', function()
   local text = random_bytes(random(0, 30))
   local ctx = pick({1, 4, 0, -1, 2.5})
   return function() local r = fnn.data.TextDataset(text, ctx, {text = true}).tokens; return r end, 'either', {#text, ctx}
end)
op('CsvDataset', function()
   local parts = {}
   for i = 1, random(1, 12) do parts[i] = pick({'1', ',', '\n', '"', 'x', '2.5', '\r\n', '', ' '}) end
   local text = table.concat(parts)
   return function() write_tmp(text); local r = fnn.data.CsvDataset(tmp, {header = false}); return r.inputs end,
          'either', {('%q'):format(text)}
end)

-- ---- the run ----
local function describe_args(args)
   local parts = {}
   for i = 1, #args do
      local a = args[i]
      if fnn.is_tensor(a) then
         parts[i] = (FREED[a] and 'freed ' or '') .. a:dtype() .. a:shape_str()
      elseif type(a) == 'table' then
         local inner = {}
         for j, v in ipairs(a) do inner[j] = fnn.is_tensor(v) and v:shape_str() or tostring(v) end
         parts[i] = '{' .. table.concat(inner, ',') .. '}'
      else
         parts[i] = type(a) == 'string' and ('%q'):format(a) or tostring(a)
      end
   end
   return table.concat(parts, ', ')
end

local function same_shape(want, t)
   local got = t:shape()
   if #got ~= #want then return false end
   for i = 1, #want do if got[i] ~= want[i] then return false end end
   return true
end

describe('api fuzz', function()
   it(('%d seeded random calls return documented shapes or errors naming the op'):format(CALLS), function()
      print(('api fuzz: seed %d, %d calls'):format(SEED, CALLS))
      io.stdout:flush()
      local failures, errors, counts = {}, 0, {}
      for k = 1, CALLS do
         math.randomseed(SEED * 7919 + k)   -- call k depends on the seed and k alone
         local entry = pick(ops)
         local ok_make, call, want, args = pcall(entry.make)
         assert(ok_make, ('api fuzz: seed %d, call %d: making %s failed: %s'):format(SEED, k, entry.name,
                                                                                    tostring(call)))
         local what = ('%s(%s)'):format(entry.name, describe_args(args))
         local ok, r = pcall(call)
         counts[entry.name] = (counts[entry.name] or 0) + 1
         local why
         if ok then
            if not fnn.is_tensor(r) then why = 'returned a ' .. type(r)
            elseif want == nil then why = 'documented to fail, returned ' .. r:shape_str()
            elseif type(want) == 'table' and not same_shape(want, r) then
               why = ('returned %s, documented %s'):format(r:shape_str(), fnn.shape_str(fnn.zeros(want)))
            end
         else
            errors = errors + 1
            if type(want) == 'table' then why = 'documented to give a tensor, raised ' .. tostring(r)
            elseif type(r) ~= 'string' then why = 'raised a ' .. type(r) .. ', not a string'
            elseif not r:match('^spec/fuzz_api_spec%.lua:%d+: ') then
               why = 'raised an error that is not at the caller\'s line: ' .. r
            elseif not r:find(entry.name, 1, true) and not (entry.alias and r:find(entry.alias, 1, true))
                   and not r:find(tmp, 1, true) then
               why = 'raised an error that does not name ' .. entry.name .. ': ' .. r
            end
         end
         if why then
            failures[#failures + 1] = ('api fuzz: seed %d, call %d: %s: %s'):format(SEED, k, what, why)
            if #failures >= 10 then break end
         end
      end
      os.remove(tmp)
      os.remove(ckpt)
      print(('api fuzz: %d calls, seed %d (%d raised errors, %d ops)'):format(CALLS, SEED, errors, #ops))
      assert(#failures == 0, '\n' .. table.concat(failures, '\n'))
   end)
end)
