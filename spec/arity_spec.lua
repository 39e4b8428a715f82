-- Arity: no op binding drops an argument past its last (x:relu(5), x:clamp(0, 1, 3), a:add(b, c)
-- ran as if the extra were not there). Every public function bound in fastnn.tensor and the op
-- families' modules this covers is driven from one table, CASES: a valid call, which must run,
-- the same call with nil after it, which must run too (a trailing nil is the same as none), and
-- with one more value, which must be refused at the caller's line as "<op>: unexpected argument
-- <N> (<value>)". A completeness check walks the Tensor methods, fnn and the loss functions under
-- nn's names, and fails on a function from these files that CASES does not list.
local fnn = require 'fastnn'
local describe_value = require('fastnn.options').describe
local Tensor = fnn.Tensor

-- the files whose bindings refuse extras (nn's layers are other work)
local FILES = {'fastnn/tensor.lua', 'fastnn/public.lua', 'fastnn/autograd.lua', 'fastnn/device.lua',
               'fastnn/precision.lua'}
for _, f in ipairs{'elementwise', 'view', 'shape', 'index', 'sort', 'embedding', 'loss', 'conv', 'pool', 'rnn',
                   'reduction', 'linalg', 'norm', 'attention'} do
   FILES[#FILES + 1] = 'fastnn/ops/' .. f .. '.lua'
end
local function ours(source)
   for _, f in ipairs(FILES) do
      if source:sub(-#f) == f then return true end
   end
   return false
end

-- the function a name reaches, through fastnn.precision's wrapper (its upvalue f: the op itself)
local function unwrapped(f)
   for _ = 1, 4 do
      if not debug.getinfo(f, 'S').source:find('fastnn/precision.lua', 1, true) then return f end
      local inner
      for i = 1, 60 do
         local name, v = debug.getupvalue(f, i)
         if name == nil then break end
         if name == 'f' and type(v) == 'function' then inner = v end
      end
      if not inner then return f end
      f = inner
   end
   return f
end

local function pack(...) return {n = select('#', ...), ...} end
local function r(...) return fnn.randn(...) end
local function x23() return fnn.randn(2, 3) end
local function long(t) return fnn.tensor(t, {dtype = 'int64'}) end

-- name -> function returning the arguments of a valid call (the function form's: the tensor first
-- for a method) and, optionally, `as`: the op name its messages use (an alias's target).
-- 'fnn.<name>' or 'nn.<name>' entries take precedence for that table, where one name means two
-- functions (fnn.long(data) creates, t:long() converts).
-- The variadic bindings (zeros/ones/empty/rand/randn sizes, reshape/view/expand sizes, permute
-- dims, repeat/tile counts) take any number of numbers, each one used; they are listed here by
-- their one-table form, after which nothing more is taken.
local CASES = {}
local function unary(...) for _, n in ipairs{...} do CASES[n] = function() return pack(x23()) end end end
unary('abs', 'exp', 'log', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'silu', 'softplus', 'selu', 'mish',
      'hardsigmoid', 'hardswish', 'softsign', 'erf', 'neg', 't', 'contiguous',
      -- tensor.lua's methods of one tensor
      'dim', 'dtype', 'float', 'numel', 'shape', 'is_contiguous', 'storage_id', 'is_freed', 'to_table', 'to_flat',
      'free', 'device_name', 'shape_str', 'is_tensor', 'rand_like', 'randn_like')
CASES['Tensor.long'] = function() return pack(fnn.ones(2, 3)) end   -- whole numbers: int64 holds them
CASES.hard_sigmoid = function() return pack(x23()), 'hardsigmoid' end
CASES.hard_swish = function() return pack(x23()), 'hardswish' end
CASES.gelu = function() return pack(x23(), {approximate = 'tanh'}) end
CASES.clamp = function() return pack(x23(), 0, 1) end
-- linalg: the products, and linear with its bias and options (or its options in the bias's place)
CASES.matmul = function() return pack(r(2, 3), r(3, 4)) end
CASES.bmm = function() return pack(r(2, 2, 3), r(2, 3, 4)) end
CASES.outer = function() return pack(r(2), r(3)) end
-- autograd, device and precision: the methods and functions of their own
CASES.backward = function()
   local p = fnn.Param(fnn.randn(3))
   return pack(p:tensor() * 2, fnn.ones(3))
end
for _, n in ipairs{'detach', 'grad_fn', 'device', 'bf16'} do CASES[n] = function() return pack(x23()) end end
CASES.bfloat16 = function() return pack(x23()), 'bf16' end
CASES.to = function() return pack(x23(), 'cpu') end
CASES.to_device = function() return pack(x23(), 'cpu'), 'to' end
for _, n in ipairs{'is_grad_enabled', 'live_nodes', 'is_autocast_enabled', 'get_float32_precision', 'get_bf16_path'} do
   CASES[n] = function() return pack() end
end
CASES.set_float32_precision = function() return pack('ieee') end
CASES.set_bf16_path = function() return pack(os.getenv('FASTNN_BF16_PATH') or 'auto') end
CASES.gradients_are_finite = function() return pack({fnn.Param(fnn.ones(2))}) end
CASES.gradcheck = function() return pack(function(a) return a * 2 end, {fnn.randn(2)}, {eps = 1e-2}) end
-- norm and attention: every argument given, options last
CASES.layer_norm = function() return pack(r(2, 3), r(3), r(3), {eps = 1e-5}) end
CASES.add_layer_norm = function() return pack(r(2, 3), r(2, 3), r(3), r(3), {eps = 1e-5}) end
CASES.batch_norm = function() return pack(r(2, 3), fnn.zeros(3), fnn.ones(3), r(3), r(3), {training = true}) end
CASES.group_norm = function() return pack(r(2, 4, 3), 2, r(4), r(4), {eps = 1e-5}) end
CASES.instance_norm = function() return pack(r(2, 3, 4), r(3), r(3), {eps = 1e-5}) end
CASES.rms_norm = function() return pack(r(2, 3), r(3), {eps = 1e-6}) end
CASES.attention = function() return pack(r(1, 2, 3, 4), r(1, 2, 3, 4), r(1, 2, 3, 4), {causal = true}) end
CASES.scaled_dot_product_attention = function()
   return pack(r(1, 2, 3, 4), r(1, 2, 3, 4), r(1, 2, 3, 4), {causal = true}), 'attention'
end
CASES.attention_cache_append = function()
   return pack(fnn.zeros(1, 2, 8, 4), fnn.zeros(1, 2, 8, 4), r(1, 2, 3, 4), r(1, 2, 3, 4), 1)
end
CASES.linear = function() return pack(r(2, 3), r(4, 3), r(4), {activation = 'relu'}) end
for _, n in ipairs{'leaky_relu', 'elu', 'celu'} do CASES[n] = function() return pack(x23(), 0.2) end end
CASES.logit = function() return pack(fnn.rand(2, 3), 0.1) end
for _, n in ipairs{'maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'add', 'sub', 'mul', 'div'} do
   CASES[n] = function() return pack(x23(), x23()) end
end
CASES.pow = function() return pack(fnn.rand(2, 3), 2) end
CASES.where = function() local x = x23(); return pack(x:gt(0), x, 0) end
-- tensor.lua: creators and inspection
-- zeros, ones and empty take an options table after the sizes (a table extra would be read as one)
for _, n in ipairs{'zeros', 'ones', 'empty'} do CASES[n] = function() return pack({2, 3}, {dtype = 'float32'}) end end
for _, n in ipairs{'rand', 'randn'} do CASES[n] = function() return pack({2, 3}) end end
CASES.full = function() return pack({2}, 1.5, {dtype = 'float32'}) end
CASES.arange = function() return pack(0, 5, 1, {dtype = 'int64'}) end
CASES.linspace = function() return pack(0, 1, 5) end
CASES.eye = function() return pack(2, 3) end
CASES.randperm = function() return pack(4) end
CASES.manual_seed = function() return pack(7) end
CASES.tensor = function() return pack({1, 2, 3, 4}, {2, 2}, {dtype = 'int64'}) end
CASES['fnn.long'] = function() return pack({1, 2}, {2}) end
CASES.uniform = function() return pack({2}, 0, 1) end
CASES.zeros_like = function() return pack(x23(), {dtype = 'int64'}) end
CASES.ones_like = CASES.zeros_like
CASES.full_like = function() return pack(x23(), 2, {dtype = 'float32'}) end
CASES.collect = function() return pack() end
CASES.set_gc_threshold = function() return pack(64 * 1024 * 1024) end   -- the default: nothing changes
CASES.size = function() return pack(x23(), 1) end
CASES.stride = CASES.size
CASES.item = function() return pack(fnn.tensor(3)) end
-- views and shapes
CASES.reshape = function() return pack(x23(), {3, 2}) end
CASES.view = CASES.reshape
CASES.expand = function() return pack(r(1, 3), {2, 3}) end
CASES.permute = function() return pack(x23(), {2, 1}) end
CASES.transpose = function() return pack(x23(), 1, 2) end
CASES.narrow = function() return pack(x23(), 2, 1, 2) end
CASES.select = function() return pack(x23(), 1, 2) end
CASES.squeeze = function() return pack(r(2, 1), 2) end
CASES.unsqueeze = function() return pack(x23(), 1) end
CASES.flatten = function() return pack(x23(), 1, 2) end
CASES.split = function() return pack(x23(), 1, 2) end
CASES.chunk = CASES.split
CASES.cat = function() return pack({x23(), x23()}, 1) end
CASES.stack = CASES.cat
CASES['repeat'] = function() return pack(x23(), {2, 1}) end
CASES.tile = function() return pack(x23(), {2}) end
CASES.pad = function() return pack(x23(), {1, 1}, 0) end
CASES.tril = function() return pack(x23(), 0) end
CASES.triu = CASES.tril
-- index, sort
CASES.index_select = function() return pack(x23(), 2, {1, 3}) end
CASES.gather = function() return pack(x23(), 2, long({{1}, {3}})) end
CASES.scatter_add = function() return pack(x23(), 2, long({{1}, {3}}), r(2, 1)) end
CASES.masked_fill = function() local x = x23(); return pack(x, x:gt(0), 0) end
CASES.sort = function() return pack(x23(), 2, {descending = true}) end
CASES.topk = function() return pack(x23(), 2, 2, {largest = false}) end
-- embedding, rnn, conv, pool
CASES.embedding = function() return pack({1, 4}, r(4, 3), {padding_idx = 1}) end
CASES.lstm_cell = function() return pack(r(2, 8), r(2, 2)) end
CASES.lstm = function() return pack(r(1, 2, 3), r(8, 3), r(8, 2), r(8), r(8), {reverse = true}) end
CASES.gru = function() return pack(r(1, 2, 3), r(6, 3), r(6, 2), r(6), r(6), {reverse = true}) end
CASES.rnn_tanh = function() return pack(r(1, 2, 3), r(2, 3), r(2, 2), r(2), r(2), {reverse = true}) end
CASES.conv1d = function() return pack(r(1, 2, 5), r(3, 2, 2), r(3), {stride = 1}) end
CASES.conv2d = function() return pack(r(1, 2, 5, 5), r(3, 2, 2, 2), r(3), {stride = 1}) end
CASES.conv3d = function() return pack(r(1, 2, 4, 4, 4), r(3, 2, 2, 2, 2), r(3), {stride = 1}) end
CASES.conv_transpose1d = function() return pack(r(1, 2, 5), r(2, 3, 2), r(3), {stride = 2}) end
CASES.conv_transpose2d = function() return pack(r(1, 2, 4, 4), r(2, 3, 2, 2), r(3), {stride = 2}) end
CASES.conv_transpose3d = function() return pack(r(1, 2, 3, 3, 3), r(2, 3, 2, 2, 2), r(3), {stride = 2}) end
CASES.max_pool1d = function() return pack(r(1, 2, 6), 2, {stride = 2}) end
CASES.avg_pool1d = CASES.max_pool1d
CASES.max_pool2d = function() return pack(r(1, 2, 4, 4), 2, {stride = 2}) end
CASES.avg_pool2d = CASES.max_pool2d
CASES.max_pool3d = function() return pack(r(1, 2, 4, 4, 4), 2, {stride = 2}) end
CASES.avg_pool3d = CASES.max_pool3d
CASES.adaptive_avg_pool2d = function() return pack(r(1, 2, 4, 4), 2) end
CASES.upsample = function() return pack(r(1, 2, 3, 3), {scale_factor = 2}) end
-- losses (fnn's and the ones under nn's names)
CASES.cross_entropy = function() return pack(x23(), {1, 3}, {reduction = 'sum'}) end
CASES.nll_loss = function() return pack(x23():log_softmax(2), {1, 3}, {reduction = 'sum'}) end
CASES['nn.nll'] = function() return pack(x23():log_softmax(2), {1, 3}, {reduction = 'sum'}), 'nll_loss' end
CASES.binary_cross_entropy = function() return pack(x23():sigmoid(), x23():gt(0), {reduction = 'sum'}) end
CASES.bce_with_logits = function() return pack(x23(), x23():gt(0), {reduction = 'sum'}) end
for _, n in ipairs{'mse_loss', 'mse', 'mae', 'huber'} do
   CASES[n] = function() return pack(x23(), x23(), {reduction = 'sum'}) end
end
CASES.l1 = function() return pack(x23(), x23(), {reduction = 'sum'}), 'mae' end
CASES.categorical_cross_entropy = function() return pack(x23():softmax(2), x23():softmax(2), {}) end
CASES.sparse_categorical_cross_entropy = function() return pack(x23():softmax(2), {1, 3}, {}) end
CASES.kl_div = function() return pack(x23():log_softmax(2), x23():softmax(2), {}) end
CASES.cosine_embedding = function() return pack(x23(), x23(), {1, -1}, {margin = 0.1}) end
-- reductions
for _, n in ipairs{'sum', 'mean', 'prod', 'logsumexp', 'argmax', 'argmin', 'max', 'min'} do
   CASES[n] = function() return pack(x23(), 1, true) end
end
CASES.var = function() return pack(x23(), 1, true, {unbiased = false}) end
CASES.std = CASES.var
CASES.norm = function() return pack(x23(), 1, 2, true) end
for _, n in ipairs{'softmax', 'log_softmax', 'cumsum', 'logcumsumexp'} do
   CASES[n] = function() return pack(x23(), 2) end
end

-- public functions of these files that CASES leaves out, each with its reason
local EXEMPT = {
   __tostring = "Tensor's printing metamethod: tostring passes exactly the tensor",
   -- fn(...) runners: what follows fn is fn's own arguments
   no_grad = 'fnn.no_grad(fn, ...) passes its arguments to fn',
   enable_grad = 'fnn.enable_grad(fn, ...) passes its arguments to fn',
   detect_anomaly = 'fnn.detect_anomaly(fn, ...) passes its arguments to fn',
   autocast = "fnn.autocast(mode, fn, ...) passes its arguments to fn",
}

-- the tables walked, by the prefix their specific CASES entries take
local TABLES = {{'Tensor', Tensor}, {'fnn', fnn}, {'nn', require('fastnn.ops.loss').functional}}

local function case_for(prefix, name)
   return CASES[prefix .. '.' .. name] or CASES[name]
end

-- each (prefix, name, function) of the walk that comes from these files
local function bound()
   local list = {}
   for _, t in ipairs(TABLES) do
      for name, f in pairs(t[2]) do
         if type(f) == 'function' and type(name) == 'string' and not name:match('^try_') and not name:match('^_[^_]')
            and ours(debug.getinfo(unwrapped(f), 'S').source) then
            list[#list + 1] = {t[1], name, f}
         end
      end
   end
   table.sort(list, function(a, b) return a[1] .. a[2] < b[1] .. b[2] end)
   return list
end

-- the values given as the extra argument, in turn: the message shows each as the options messages
-- do (a tensor by its shape, a table by its contents, never an address)
local EXTRAS = {5, 'more', true, {1, 2}, function() return fnn.ones(2) end, {dim = 1}}

-- f(args) at a known line of this file, as a method (through the tensor's __index) when the
-- prefix is Tensor; -> ok, error, the call's line
local THIS = debug.getinfo(1, 'S').short_src
local function call(prefix, name, f, args, n)
   if prefix == 'Tensor' then
      local x = args[1]
      assert.equals(f, x[name], name .. ' reached through the tensor')
   end
   local line
   local ok, err = pcall(function()
      line = debug.getinfo(1, 'l').currentline; local out = f(unpack(args, 1, n))
      return out   -- not a tail call: the caller's line is this one
   end)
   return ok, err, line
end

describe('arity', function()
   it('refuses an argument past the last of every binding, at the caller\'s line, naming it', function()
      local checked = 0
      for i, entry in ipairs(bound()) do
         local prefix, name, f = entry[1], entry[2], entry[3]
         local make = case_for(prefix, name)
         if make then
            local label = prefix .. '.' .. name
            local args, as = make()
            local ok, err = call(prefix, name, f, args, args.n)
            assert(ok, label .. ': the valid call failed: ' .. tostring(err))
            args = make()
            args.n = args.n + 1                      -- a trailing nil: as none
            ok, err = call(prefix, name, f, args, args.n)
            assert(ok, label .. ': a trailing nil was refused: ' .. tostring(err))
            args = make()
            local extra = EXTRAS[i % #EXTRAS + 1]
            if type(extra) == 'function' then extra = extra() end
            args[args.n + 1] = extra
            local line
            ok, err, line = call(prefix, name, f, args, args.n + 1)
            assert(not ok, label .. ': an extra argument was accepted')
            local want = ('%s: unexpected argument %d (%s)'):format(as or name, args.n + 1, describe_value(extra))
            assert(err:find(want, 1, true), label .. ': expected "' .. want .. '", got: ' .. err)
            assert.equals(THIS .. ':' .. line .. ': ', err:match('^[^:]+:%d+: '), label .. ': raised at ' .. err)
            assert.is_nil(err:find('0x%x+'), label .. ': an address in ' .. err)
            checked = checked + 1
         end
      end
      assert.is_true(checked > 150, 'only ' .. checked .. ' bindings checked')
   end)

   it('lists every public function of these files (completeness)', function()
      local missing = {}
      for _, entry in ipairs(bound()) do
         local prefix, name = entry[1], entry[2]
         if not case_for(prefix, name) and not EXEMPT[name] then missing[#missing + 1] = prefix .. '.' .. name end
      end
      assert.same({}, missing, 'bindings without an arity case: ' .. table.concat(missing, ', '))
      -- and no case names nothing (a renamed op would leave its case behind)
      local stale = {}
      for key in pairs(CASES) do
         local prefix, name = key:match('^(%a+)%.(.+)$')
         local found = false
         for _, t in ipairs(TABLES) do
            if (prefix == nil or prefix == t[1]) and type(t[2][name or key]) == 'function' then found = true end
         end
         if not found then stale[#stale + 1] = key end
      end
      table.sort(stale)
      assert.same({}, stale, 'cases naming no function: ' .. table.concat(stale, ', '))
   end)

   it('refuses what follows an options table that stands in an earlier place', function()
      local x = x23()
      local function err_of(f, ...) return select(2, pcall(f, ...)) end
      assert.matches("sort: unexpected argument 3 (5)", err_of(x.sort, x, {descending = true}, 5), 1, true)
      assert.matches("topk: unexpected argument 4 (1)", err_of(x.topk, x, 2, {largest = false}, 1), 1, true)
      assert.matches("var: unexpected argument 3 (true)", err_of(x.var, x, {unbiased = false}, true), 1, true)
      assert.matches("std: unexpected argument 4 (a table {})", err_of(x.std, x, 1, {}, {}), 1, true)
      assert.matches("arange: unexpected argument 3 (2)", err_of(fnn.arange, 5, {dtype = 'int64'}, 2), 1, true)
      assert.matches("arange: unexpected argument 4 (1)", err_of(fnn.arange, 0, 5, {dtype = 'int64'}, 1), 1, true)
      assert.matches("tensor: unexpected argument 3 (a table {2})", err_of(fnn.tensor, {1, 2}, {dtype = 'int64'}, {2}),
                     1, true)
      -- sizes: a table, then the options (zeros, ones, empty), then nothing
      assert.matches("zeros: unexpected argument 3 (5)", err_of(fnn.zeros, {2}, {dtype = 'int64'}, 5), 1, true)
      assert.matches("ones: unexpected argument 2 ('int64')", err_of(fnn.ones, {2}, 'int64'), 1, true)
      assert.matches("rand: unexpected argument 2 (a table {dtype = 'int64'})", err_of(fnn.rand, {2}, {dtype = 'int64'}),
                     1, true)
      assert.matches("reshape: unexpected argument 3 (6)", err_of(x.reshape, x, {6}, 6), 1, true)
      assert.matches("permute: unexpected argument 3 (1)", err_of(x.permute, x, {2, 1}, 1), 1, true)
      -- the elementwise max takes no keepdim
      assert.matches("max: unexpected argument 3 (true)", err_of(x.max, x, x23(), true), 1, true)
      -- the varargs of the reductions: a nil passes, the first value after it is named
      assert.same({3}, x:sum(1, false, nil):shape())
      assert.matches("sum: unexpected argument 5 (a table {})", err_of(x.sum, x, 1, true, nil, {}), 1, true)
      -- and the forms still take what they take
      assert.equals('int64', fnn.zeros({2}, {dtype = 'int64'}):dtype())
      assert.equals('int64', fnn.ones(2, 3, {dtype = 'int64'}):dtype())
      assert.same({0, 2, 4}, fnn.arange(0, 5, 2, {dtype = 'int64'}):to_flat())
      assert.same({0, 1, 2}, fnn.arange(3, {dtype = 'float32'}):to_flat())
      local row = (x:sort({descending = true})):select(1, 1):to_flat()
      assert.is_true(row[1] >= row[2] and row[2] >= row[3], 'sort{descending = true} still sorts down')
   end)

   it('refuses a shape beside data that has its own', function()
      local t = fnn.ones(2, 3)
      assert.matches('tensor: shape a table {6} is for a flat table of values, not a tensor [2,3]',
                     select(2, pcall(fnn.tensor, t, {6})), 1, true)
      assert.matches('tensor: shape a table {2} is for a flat table of values, not 5',
                     select(2, pcall(fnn.tensor, 5, {2})), 1, true)
      assert.matches('long: shape a table {6} is for a flat table of values, not a tensor [2,3]',
                     select(2, pcall(fnn.long, t, {6})), 1, true)
      assert.same({1, 2, 3, 4}, fnn.long({1, 2, 3, 4}, {2, 2}):to_flat())
   end)

   it('says what a third argument of add and sub would mean instead of guessing', function()
      local a, b = x23(), x23()
      local err = select(2, pcall(a.add, a, b, 2))
      assert.matches('add: unexpected argument 3 (2); add takes (a, b); for a scaled operand write a + alpha * b', err,
                     1, true)
      err = select(2, pcall(fnn.sub, a, b, b))
      assert.matches('sub: unexpected argument 3 (a tensor [2,3]); sub takes (a, b); for a scaled operand write '
                     .. 'a - alpha * b', err, 1, true)
      -- the operators are untouched: a + b is add(a, b)
      assert.same((a + b):to_flat(), a:add(b):to_flat())
   end)

   it('raises at the caller\'s line through the bfloat16 wrapper and returns the message from try_ forms', function()
      local x = x23():bf16()
      local line = debug.getinfo(1, 'l').currentline; local ok, err = pcall(function() local y = x:exp(2); return y end)
      assert.is_false(ok)
      assert.matches(THIS .. ':' .. line .. ': exp: unexpected argument 2 (2)', err, 1, true)
      line = debug.getinfo(1, 'l').currentline; ok, err = pcall(function() local y = x:sum(1, true, 3); return y end)
      assert.matches(THIS .. ':' .. line .. ': sum: unexpected argument 4 (3)', err, 1, true)
      local y, msg = x23():try_relu(5)
      assert.is_nil(y)
      assert.equals('relu: unexpected argument 2 (5); relu takes (x)', msg)
   end)

   it('refuses an argument past the last of an nn class\'s __init, at the caller\'s line', function()
      local nn = fnn.nn
      local line = debug.getinfo(1, 'l').currentline; local ok, err = pcall(function() local m = nn.Linear(3, 4, {}, 5); return m end)
      assert.is_false(ok)
      assert.matches(THIS .. ':' .. line .. ': nn.Linear: unexpected argument 4 (5); it takes 3', err, 1, true)
      assert.matches('nn.ReLU: unexpected argument 1 (a table {inplace = true})',
                     select(2, pcall(nn.ReLU, {inplace = true})), 1, true)
      assert.matches("nn.Conv2d: unexpected argument 5 ('same')",
                     select(2, pcall(nn.Conv2d, 1, 2, 3, {padding = 1}, 'same')), 1, true)
      -- trailing nils are none; a user's class is held to its own __init; a vararg __init takes all
      assert.equals(4, nn.Linear(3, 4, nil, nil).weight:tensor():size(1))
      local Pair = nn.Module:extend('Pair')
      function Pair:__init(a, b) self.a, self.b = a, b end
      assert.equals(2, Pair(1, 2).b)
      assert.matches('nn.Pair: unexpected argument 3 (3); it takes 2', select(2, pcall(Pair, 1, 2, 3)), 1, true)
      local Many = nn.Module:extend('Many')
      function Many:__init(...) self.n = select('#', ...) end
      assert.equals(4, Many(1, 2, 3, 4).n)
      assert.equals(2, #nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
   end)

   it('refuses an argument past an optimizer\'s options, at the caller\'s line', function()
      local params = {fnn.Param(fnn.ones(2))}
      local line = debug.getinfo(1, 'l').currentline; local ok, err = pcall(function() local o = fnn.optim.SGD(params, 0.1, {momentum = 0.9}, 5); return o end)
      assert.is_false(ok)
      assert.matches(THIS .. ':' .. line .. ': optim.SGD: unexpected argument 4 (5); it takes (params, lr, opts)', err, 1,
                     true)
      assert.matches('optim.Adam: unexpected argument 4 (true)', select(2, pcall(fnn.optim.Adam, params, 1e-3, {}, true)),
                     1, true)
      assert.equals(0.1, fnn.optim.SGD(params, 0.1, nil, nil).options.lr)
   end)
end)

-- The layer above the ops: a layer's forward (one check for every class, in nn.Module's construct),
-- the optimizers' methods, the LR schedules, serialization, tensorboard, onnx, fnn.profile's
-- report and the Keras-style model methods. ROWS is driven like CASES: a valid call, the same with
-- a trailing nil, and with one more value, refused at the caller's line as "<op>: unexpected
-- argument <N> (<value>)", N counting the user's arguments (not self). The walk below lists
-- every public function of those modules; one without a row or an exemption fails the spec.
describe('arity above the ops', function()
   local nn, optim = fnn.nn, fnn.optim
   local serialize = require 'fastnn.serialize'
   local tensorboard = require 'fastnn.tensorboard'
   local onnx = require 'fastnn.onnx'
   local keras_model = require 'fastnn.keras.model'
   local tmp = os.tmpname()
   os.remove(tmp)
   os.execute('mkdir -p ' .. tmp)
   teardown(function() os.execute('rm -rf ' .. tmp) end)
   local function path(name) return tmp .. '/' .. name end
   local function params() return {fnn.Param(fnn.ones(2))} end
   local function stepped(cls)   -- an optimizer whose one parameter has stepped once
      local p = fnn.Param(fnn.ones(2))
      local o = optim[cls]({p}, 0.1)
      ;(p:tensor() * p:tensor()):sum():backward()
      o:step()
      return o
   end
   local function mlp()
      local m = nn.Sequential(nn.Linear(3, 2))
      m:compile{optimizer = 'sgd', loss = 'mse'}
      return m
   end
   local X, Y = fnn.randn(4, 3), fnn.randn(4, 2)
   local writer = tensorboard.SummaryWriter(path('tb'))
   local report = fnn.profile(function() return fnn.ones(2) + 1 end)

   -- key -> function returning (f, args as a pack, op name in the message, method?): f(unpack(args))
   -- is the call; a method's args start with self, which the message's count leaves out
   local function method(obj, name, op, ...) return obj[name], pack(obj, ...), op, true end
   local ROWS = {
      -- optim: the base's methods (every optimizer inherits them) on SGD, Adam's own update_many aside
      ['Optimizer:bind'] = function() return method(optim.SGD{lr = 0.1}, 'bind', 'optim.SGD:bind', params()) end,
      ['Optimizer:step'] = function() return method(stepped('Adam'), 'step', 'optim.Adam:step', function() end) end,
      ['Optimizer:zero_grad'] = function() return method(stepped('SGD'), 'zero_grad', 'optim.SGD:zero_grad') end,
      ['Optimizer:parameters'] = function() return method(stepped('SGD'), 'parameters', 'optim.SGD:parameters') end,
      ['Optimizer:gradients_are_finite'] = function()
         return method(stepped('SGD'), 'gradients_are_finite', 'optim.SGD:gradients_are_finite')
      end,
      ['Optimizer:lr'] = function() return method(stepped('RMSprop'), 'lr', 'optim.RMSprop:lr') end,
      ['Optimizer:set_lr'] = function() return method(stepped('SGD'), 'set_lr', 'optim.SGD:set_lr', 0.5) end,
      ['Optimizer:steps'] = function() return method(stepped('Lion'), 'steps', 'optim.Lion:steps') end,
      ['Optimizer:state'] = function() return method(stepped('SGD'), 'state', 'optim.SGD:state') end,
      ['Optimizer:load_state'] = function()
         local o = stepped('Adam')
         return method(o, 'load_state', 'optim.Adam:load_state', o:state())
      end,
      ['Lookahead:step'] = function()
         return method(optim.Lookahead(stepped('SGD'), 2), 'step', 'optim.Lookahead:step', function() end)
      end,
      ['tensorboard.crc32c'] = function() return tensorboard.crc32c, pack('abc') end,
      ['tensorboard.masked_crc32c'] = function() return tensorboard.masked_crc32c, pack('abc') end,
      ['Lookahead:set_lr'] = function() return method(optim.Lookahead(stepped('SGD')), 'set_lr', 'optim.Lookahead:set_lr', 0.2) end,
      ['Lookahead:state'] = function() return method(optim.Lookahead(stepped('SGD')), 'state', 'optim.Lookahead:state') end,
      ['Lookahead:load_state'] = function()
         local o = optim.Lookahead(stepped('SGD'))
         return method(o, 'load_state', 'optim.Lookahead:load_state', o:state())
      end,
      ['Ema:update'] = function() return method(optim.Ema(params()), 'update', 'optim.Ema:update') end,
      ['Ema:swap_in'] = function() return method(optim.Ema(params()), 'swap_in', 'optim.Ema:swap_in') end,
      ['Ema:swap_out'] = function()
         local e = optim.Ema(params())
         e:swap_in()
         return method(e, 'swap_out', 'optim.Ema:swap_out')
      end,
      ['Ema:state'] = function() return method(optim.Ema(params()), 'state', 'optim.Ema:state') end,
      ['Ema:load_state'] = function()
         local e = optim.Ema(params())
         return method(e, 'load_state', 'optim.Ema:load_state', e:state())
      end,
      ['ReduceOnPlateau:step'] = function()
         return method(optim.ReduceOnPlateau(stepped('SGD')), 'step', 'optim.ReduceOnPlateau:step', 1.5)
      end,
      ['ReduceOnPlateau:lr'] = function() return method(optim.ReduceOnPlateau(stepped('SGD')), 'lr', 'optim.ReduceOnPlateau:lr') end,
      ['Schedule:lr_at'] = function() return method(optim.StepDecay(0.1, 10), 'lr_at', 'optim.StepDecay:lr_at', 3) end,
      ['Schedule:__call'] = function() local s = optim.OneCycle(0.1, 100); return getmetatable(s).__call, pack(s, 3), 'optim.OneCycle', true end,
      ['Schedule:apply'] = function()
         return method(optim.CosineAnnealing(0.1, 10), 'apply', 'optim.CosineAnnealing:apply', stepped('SGD'), 2)
      end,
      -- the constructors of the classes built with __new or a schedule's __init (the optimizers' and
      -- nn's constructors have their own blocks above)
      ['optim.Ema'] = function() return optim.Ema, pack(params(), 0.9) end,
      ['optim.Lookahead'] = function() return optim.Lookahead, pack(stepped('SGD'), 3, 0.5) end,
      ['optim.ReduceOnPlateau'] = function() return optim.ReduceOnPlateau, pack(stepped('SGD'), {patience = 2}) end,
      ['optim.StepDecay'] = function() return optim.StepDecay, pack(0.1, 10, 0.5) end,
      ['optim.CosineAnnealing'] = function() return optim.CosineAnnealing, pack(0.1, 10, {min = 0.01}) end,
      ['optim.ExponentialDecay'] = function() return optim.ExponentialDecay, pack(0.1, 10, 0.9, {staircase = true}) end,
      ['optim.OneCycle'] = function() return optim.OneCycle, pack(0.1, 100, {pct_start = 0.3}) end,
      ['optim.Warmup'] = function() return optim.Warmup, pack(optim.StepDecay(0.1, 10), 5) end,
      ['optim.clip_grad_norm'] = function() return optim.clip_grad_norm, pack(stepped('SGD'):parameters(), 1) end,
      ['optim.clip_grad_value'] = function() return optim.clip_grad_value, pack(stepped('SGD'):parameters(), 1) end,
      ['optim.gradients_are_finite'] = function() return optim.gradients_are_finite, pack(params()) end,
      -- serialization (fnn.save and friends are these, by a tail call)
      ['serialize.save'] = function() return fnn.save, pack(nn.Linear(2, 2), path('a.fdl'), {}), 'save' end,
      ['serialize.load'] = function()
         local m = nn.Linear(2, 2)
         fnn.save(m, path('b.fdl'))
         return fnn.load, pack(m, path('b.fdl'), {}), 'load'
      end,
      ['serialize.save_training'] = function()
         return fnn.save_training, pack(nn.Linear(2, 2), stepped('SGD'), 3, path('c.fdl'), {}), 'save_training'
      end,
      ['serialize.load_training'] = function()
         local m = nn.Linear(2, 2)
         local o = optim.SGD(m:parameters(), 0.1)
         fnn.save_training(m, o, 3, path('d.fdl'))
         return fnn.load_training, pack(m, o, path('d.fdl'), {}), 'load_training'
      end,
      ['serialize.save_safetensors'] = function()
         return fnn.save_safetensors, pack({w = fnn.ones(2)}, path('e.safetensors'), {}), 'save_safetensors'
      end,
      ['serialize.load_safetensors'] = function()
         fnn.save_safetensors({w = fnn.ones(2)}, path('f.safetensors'))
         return fnn.load_safetensors, pack(path('f.safetensors'), {}), 'load_safetensors'
      end,
      ['serialize.info'] = function()
         fnn.save(nn.Linear(2, 2), path('g.fdl'))
         return serialize.info, pack(path('g.fdl')), 'info'
      end,
      -- tensorboard
      ['tensorboard.SummaryWriter'] = function() return tensorboard.SummaryWriter, pack(path('tb2'), {max_queue = 5}) end,
      ['SummaryWriter:add_scalar'] = function() return method(writer, 'add_scalar', 'SummaryWriter:add_scalar', 'a', 1, 0) end,
      ['SummaryWriter:add_scalars'] = function()
         return method(writer, 'add_scalars', 'SummaryWriter:add_scalars', 'b', {x = 1}, 0)
      end,
      ['SummaryWriter:add_histogram'] = function()
         return method(writer, 'add_histogram', 'SummaryWriter:add_histogram', 'c', fnn.randn(8), 0)
      end,
      ['SummaryWriter:add_image'] = function()
         return method(writer, 'add_image', 'SummaryWriter:add_image', 'd', fnn.rand(3, 2, 2), 0)
      end,
      ['SummaryWriter:add_text'] = function() return method(writer, 'add_text', 'SummaryWriter:add_text', 'e', 'hi', 0) end,
      ['SummaryWriter:flush'] = function() return method(writer, 'flush', 'SummaryWriter:flush') end,
      ['SummaryWriter:close'] = function()
         return method(tensorboard.SummaryWriter(path('tb3')), 'close', 'SummaryWriter:close')
      end,
      ['SummaryWriter:get_logdir'] = function() return method(writer, 'get_logdir', 'SummaryWriter:get_logdir') end,
      -- onnx
      ['onnx.export'] = function()
         return onnx.export, pack(nn.Sequential(nn.Linear(3, 2), nn.ReLU()), {X}, path('m.onnx'), {})
      end,
      ['onnx.load'] = function()
         onnx.export(nn.Sequential(nn.Linear(3, 2)), {X}, path('n.onnx'))
         return onnx.load, pack(path('n.onnx'))
      end,
      -- fnn.profile's report
      ['Report:text'] = function() return method(report, 'text', 'profile report:text', 3) end,
      -- the Keras-style model methods (Sequential's; Graph's are the same functions)
      ['keras:compile'] = function() return method(mlp(), 'compile', 'Sequential:compile', {optimizer = 'adam', loss = 'mse'}) end,
      ['keras:fit'] = function() return method(mlp(), 'fit', 'Sequential:fit', X, Y, {epochs = 1, verbose = 0}) end,
      ['keras:train_batch'] = function() return method(mlp(), 'train_batch', 'Sequential:train_batch', X, Y) end,
      ['keras:evaluate'] = function() return method(mlp(), 'evaluate', 'Sequential:evaluate', X, Y, {batch_size = 2}) end,
      ['keras:predict'] = function() return method(mlp(), 'predict', 'Sequential:predict', X, {batch_size = 2}) end,
      ['keras:summary'] = function()
         local m = mlp()
         m:build({4, 3})
         return method(m, 'summary', 'Sequential:summary', {print = false})
      end,
      ['keras:learning_rate'] = function() return method(mlp(), 'learning_rate', 'Sequential:learning_rate') end,
      ['keras:set_learning_rate'] = function()
         return method(mlp(), 'set_learning_rate', 'Sequential:set_learning_rate', 0.1)
      end,
      ['keras:set_seed'] = function() return method(mlp(), 'set_seed', 'Sequential:set_seed', 3) end,
      ['keras:input_shape'] = function()
         local m = mlp()
         m:build({4, 3})
         return method(m, 'input_shape', 'Sequential:input_shape')
      end,
      ['keras:save_weights'] = function() return method(mlp(), 'save_weights', 'Sequential:save_weights', path('h.fdl')) end,
      ['keras:load_weights'] = function()
         local m = mlp()
         m:save_weights(path('i.fdl'))
         return method(m, 'load_weights', 'Sequential:load_weights', path('i.fdl'))
      end,
      ['keras:build'] = function() return method(mlp(), 'build', 'Sequential:build', {4, 3}) end,
      ['keras:output_shape'] = function() return method(mlp(), 'output_shape', 'Sequential:output_shape', {4, 3}) end,
   }
   ROWS['keras:save_to_path'], ROWS['keras:load_from_path'] = ROWS['keras:save_weights'], ROWS['keras:load_weights']
   -- nn.Module's own methods, on a plain Module (a class's own overrides are its own)
   local function model()
      local m = nn.Module()
      m:add_module('lin', nn.Linear(3, 2))
      m:add_module('bn', nn.BatchNorm1d(2))
      return m
   end
   local function module_row(name, ...)
      local args = pack(...)
      ROWS['Module:' .. name] = function()
         return method(model(), name, 'nn.Module:' .. name, unpack(args, 1, args.n))
      end
   end
   for _, name in ipairs{'named_children', 'children', 'named_modules', 'modules', 'named_parameters', 'named_buffers',
                         'parameters', 'buffers', 'eval', 'zero_grad', 'freeze', 'unfreeze'} do
      module_row(name)
   end
   module_row('train', false)
   module_row('to_device', 'cpu')
   module_row('num_parameters', {trainable = true})
   module_row('apply', function() end)
   module_row('is_instance_of', nn.Sequential)
   module_row('set_buffer', 'bn.running_mean', fnn.zeros(2))
   local Double = nn.Module:extend('Double')   -- its output_shape is the base's (forward on zeros)
   function Double.forward(_, x) return x * 2 end
   ROWS['Module:output_shape'] = function() return method(Double(), 'output_shape', 'nn.Double:output_shape', {4, 3}) end
   ROWS['Module:add_module'] = function() return method(nn.Module(), 'add_module', 'nn.Module:add_module', 'a', nn.ReLU()) end
   ROWS['Module:register_parameter'] = function()
      return method(nn.Module(), 'register_parameter', 'nn.Module:register_parameter', 'w', fnn.Param(fnn.ones(2)))
   end
   ROWS['Module:register_buffer'] = function()
      return method(nn.Module(), 'register_buffer', 'nn.Module:register_buffer', 'b', fnn.ones(2))
   end
   ROWS['Module:extend'] = function() return method(nn.Module, 'extend', 'nn.Module:extend', 'Extended') end
   -- ModuleList's own methods (nn.Sequential inherits add, insert, remove, get, len)
   local function list() return nn.ModuleList(nn.ReLU(), nn.Tanh()) end
   ROWS['ModuleList:add'] = function() return method(list(), 'add', 'nn.ModuleList:add', nn.ReLU()) end
   ROWS['ModuleList:append'] = function() return method(list(), 'append', 'nn.ModuleList:add', nn.ReLU()) end
   ROWS['ModuleList:insert'] = function() return method(list(), 'insert', 'nn.ModuleList:insert', nn.ReLU(), 1) end
   ROWS['ModuleList:remove'] = function() return method(list(), 'remove', 'nn.ModuleList:remove', 1) end
   ROWS['ModuleList:get'] = function() return method(list(), 'get', 'nn.ModuleList:get', 2) end
   ROWS['ModuleList:len'] = function() return method(list(), 'len', 'nn.ModuleList:len') end
   ROWS['ModuleList:named_children'] = function()
      return method(list(), 'named_children', 'nn.ModuleList:named_children')
   end
   -- what Lookahead hands on to the optimizer it wraps
   for _, name in ipairs{'zero_grad', 'lr', 'parameters', 'gradients_are_finite', 'steps'} do
      ROWS['Lookahead:' .. name] = function()
         return method(optim.Lookahead(stepped('SGD')), name, 'optim.Lookahead:' .. name)
      end
   end

   -- public functions of these modules that ROWS leaves out, each with its reason
   local EXEMPT_ABOVE = {
      ['Optimizer:extend'] = 'optim.Optimizer:extend(name, defaults, state_tensors) makes a class; a class writer\'s call',
      ['profile.profile'] = 'fnn.profile(fn, ...) passes its arguments to fn',
      ['Module:forward'] = "the layers' forward: one check for every class, in construct (its own test below)",
      ['Module:short_str'] = "a layer writer's hook most classes define; printing calls it with exactly self",
      ['Module:is_module'] = 'nn.Module.is_module(v): a predicate of one value, read on every field assignment',
      ['ModuleList:forward'] = 'raises its own message: a ModuleList has no forward',
   }
   -- a class writer's hooks, in any optimizer or schedule class: the base calls them with exactly
   -- their arguments (update(p, group, st), rate(t), ...); a user does not
   local HOOKS = {update = true, update_many = true, check_options = true, check_range = true, check_betas = true,
                  required_state = true, coupled_decay = true, zero_state = true, zeros_like_param = true,
                  full_like_param = true, rate = true, describe = true}
   local function exempt(key) return EXEMPT_ABOVE[key] or HOOKS[key:match(':(.*)$') or ''] end

   -- 'Owner:name' for each public function of a class chain (the class that holds it names it)
   local function walk_class(list, cls, owner_of)
      local c = cls
      while c do
         for k, f in pairs(c) do
            if type(f) == 'function' and type(k) == 'string' and (not k:match('^_') or k == '__call') then
               list[(owner_of and owner_of(c) or rawget(c, '_name') or '?') .. ':' .. k] = true
            end
         end
         c = rawget(c, '_parent')
      end
   end
   local function walked()
      local list = {}
      local dir = package.searchpath('fastnn.optim.Optimizer', package.path):gsub('Optimizer%.lua$', '')
      for file in io.popen('ls ' .. dir):lines() do
         local name = file:match('^(%u%w*)%.lua$')
         if name then
            local cls = optim[name]
            if rawget(cls, '_name') ~= 'Optimizer' and (rawget(cls, 'rate') or rawget(cls, '__new')) then
               list['optim.' .. name] = true   -- a schedule or a __new class: its constructor here
            end
            -- the schedules' common methods under Schedule's name, the optimizers' under Optimizer's
            walk_class(list, cls, function(c)
               local parent = rawget(c, '_parent')
               if parent and rawget(parent, '_parent') == nil and rawget(parent, 'lr_at') then return 'Schedule' end
               if rawget(c, 'lr_at') and not rawget(c, 'rate') then return 'Schedule' end
               return rawget(c, '_name')
            end)
         end
      end
      for _, m in ipairs{{'optim', optim}, {'serialize', serialize}, {'tensorboard', tensorboard}, {'onnx', onnx},
                         {'profile', require('fastnn.profile')}} do
         for k, f in pairs(m[2]) do
            if type(f) == 'function' and not k:match('^_') and not k:match('^try_') then list[m[1] .. '.' .. k] = true end
         end
      end
      walk_class(list, getmetatable(writer), function() return 'SummaryWriter' end)
      for k, f in pairs(nn.Module) do
         if type(f) == 'function' and type(k) == 'string' and not k:match('^_') then list['Module:' .. k] = true end
      end
      for k, f in pairs(nn.ModuleList) do
         if type(f) == 'function' and type(k) == 'string' and not k:match('^_') and rawget(nn.ModuleList, k) then
            list['ModuleList:' .. k] = true
         end
      end
      walk_class(list, getmetatable(report))
      for k, f in pairs(nn.Sequential) do
         if type(f) == 'function' and not k:match('^_') and debug.getinfo(f, 'S').source:find('fastnn/keras/', 1, true) then
            list['keras:' .. k] = true
         end
      end
      return list
   end

   it('refuses an argument past the last, at the caller\'s line, naming the function and the position', function()
      local checked = 0
      local keys = {}
      for k in pairs(ROWS) do keys[#keys + 1] = k end
      table.sort(keys)
      for i, key in ipairs(keys) do
         local f, args, as, is_method = ROWS[key]()
         as = as or key
         local ok, err = pcall(f, unpack(args, 1, args.n))
         if not ok then error(key .. ': the valid call failed: ' .. tostring(err)) end
         f, args = ROWS[key]()
         ok, err = pcall(f, unpack(args, 1, args.n + 1))
         if not ok then error(key .. ': a trailing nil was refused: ' .. tostring(err)) end
         f, args = ROWS[key]()
         local extra = EXTRAS[i % #EXTRAS + 1]
         if type(extra) == 'function' then extra = extra() end
         args[args.n + 1] = extra
         local line
         ok, err, line = call('', key, f, args, args.n + 1)
         assert(not ok, key .. ': an extra argument was accepted')
         local pos = is_method and args.n or args.n + 1
         local want = ('%s: unexpected argument %d (%s)'):format(as, pos, describe_value(extra))
         assert(tostring(err):find(want, 1, true), key .. ': expected "' .. want .. '", got: ' .. tostring(err))
         assert.equals(THIS .. ':' .. line .. ': ', err:match('^[^:]+:%d+: '), key .. ': raised at ' .. err)
         assert.is_nil(err:find('0x%x+'), key .. ': an address in ' .. err)
         checked = checked + 1
      end
      assert.is_true(checked > 60, 'only ' .. checked .. ' functions checked')
   end)

   it('refuses an input past the last of a layer\'s forward, called or direct, at the caller\'s line', function()
      local x = fnn.randn(2, 3)
      -- f() at a known line of this file -> the message
      local function err_at(f)
         local line = debug.getinfo(1, 'l').currentline; local ok, err = pcall(function() local y = f(); return y end)
         assert.is_false(ok, 'an extra input was accepted')
         return err:gsub('^' .. THIS:gsub('%p', '%%%0') .. ':' .. line .. ': ', '', 1), err
      end
      local function refused(want, f)
         local msg, err = err_at(f)
         assert.equals(want, msg, 'raised at ' .. err)
      end
      local l = nn.Linear(3, 4)
      refused('nn.Linear:forward: unexpected argument 2 (a tensor [2,3]); it takes (x)', function() return l(x, x) end)
      refused('nn.Linear:forward: unexpected argument 2 (5); it takes (x)', function() return l:forward(x, 5) end)
      refused('nn.Linear:forward: unexpected argument 3 (true); it takes (x)', function() return l(x, nil, true) end)
      assert.same({2, 4}, l(x, nil):shape())   -- a trailing nil is none
      refused("nn.Linear:forward: unexpected argument 5 ('last'); it takes (x)",
              function() return l(x, nil, nil, nil, 'last') end)   -- the last of the four slots looked at
      -- forwards of other shapes: several inputs and an options table, a state, a loss, a `_` self
      local q = fnn.randn(1, 3, 4)
      local mha = nn.MultiheadAttention(4, 2)
      refused('nn.MultiheadAttention:forward: unexpected argument 5 (1); it takes (q, k, v, opts)',
              function() return mha(q, q, q, {}, 1) end)
      assert.same({1, 3, 4}, mha(q, q, q, {}):shape())
      local lstm = nn.LSTM(3, 2)
      refused("nn.LSTM:forward: unexpected argument 3 ('h'); it takes (x, state)",
              function() return lstm(fnn.randn(1, 2, 3), nil, 'h') end)
      refused('nn.MSELoss:forward: unexpected argument 3 (a table {}); it takes (pred, target)', function() return nn.MSELoss()(x, x, {}) end)
      refused('nn.Identity:forward: unexpected argument 2 (2); it takes (x)', function() return nn.Identity()(x, 2) end)
      -- a container names the child that refused, at the caller's line
      local model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
      refused('Sequential[1] nn.Linear(3 -> 2): nn.Linear:forward: unexpected argument 2 (5); it takes (x)',
              function() return model(x, 5) end)
      -- under autocast the count is the layer's own forward's, not the precision wrapper's (a vararg)
      refused('nn.Linear:forward: unexpected argument 2 (5); it takes (x)',
              function() return fnn.autocast('bf16', function() return l(x:bf16(), 5) end) end)
      assert.same({2, 4}, fnn.autocast('bf16', function() return l(x:bf16()) end):shape())
      -- a user's class is held to its own forward; a vararg forward takes all; a forward defined
      -- again after the first construction is checked from the next one
      local Pair = nn.Module:extend('PairInput')
      function Pair.forward(_, a, b) return a + b end
      local pair = Pair()
      assert.same({2, 3}, pair(x, x):shape())
      refused('nn.PairInput:forward: unexpected argument 3 (1); it takes (a, b)', function() return pair(x, x, 1) end)
      local Many = nn.Module:extend('ManyInputs')
      function Many.forward(_, ...) return select('#', ...) end
      assert.equals(4, Many()(1, 2, 3, 4))
      function Pair.forward(_, a) return a end
      refused('nn.PairInput:forward: unexpected argument 2 (a tensor [2,3]); it takes (a)', function() return Pair()(x, x) end)
      -- the check is one wrapper per forward function, shared by the classes that inherit it
      local Sub = nn.Linear:extend('SubLinear')
      assert.equals(nn.Linear.forward, Sub(3, 4).forward)
   end)

   it('lists every public function of these modules (completeness)', function()
      local list = walked()
      local missing, stale = {}, {}
      for key in pairs(list) do
         if not ROWS[key] and not exempt(key) then missing[#missing + 1] = key end
      end
      for key in pairs(ROWS) do if not list[key] then stale[#stale + 1] = key end end
      table.sort(missing)
      table.sort(stale)
      assert.same({}, missing, 'functions without an arity row: ' .. table.concat(missing, ', '))
      assert.same({}, stale, 'rows naming no function: ' .. table.concat(stale, ', '))
   end)
end)

-- ---------------------------------------------------------------------------------------------
-- fastnn.data: the data module's public functions (DataLoader and its batches, the datasets'
-- constructors and methods, the transforms, data.*) refuse an argument past their last, at the
-- caller's line, as the bindings above do; a completeness walk fails on one not listed here.
describe('arity: fastnn.data', function()
   local data = fnn.data
   local T = data.transforms
   local ffi = require 'ffi'
   local dir = io.popen('mktemp -d /tmp/fastnn-arity-data-XXXXXX'):read('*l')
   teardown(function() os.execute('rm -rf ' .. dir) end)
   local csv = dir .. '/t.csv'
   do
      local fh = assert(io.open(csv, 'w'))
      fh:write('a,b,y\n1,2,0\n3,4,1\n')
      fh:close()
   end
   local NOWHERE = 'http://127.0.0.1:9/'   -- refused at once: a download fails without the network
   local saved = {data.Mnist.mirrors, data.FashionMnist.mirrors, data.dir()}
   data.Mnist.mirrors, data.FashionMnist.mirrors = {NOWHERE}, {NOWHERE}
   data.set_dir(dir .. '/data')
   teardown(function() data.Mnist.mirrors, data.FashionMnist.mirrors = saved[1], saved[2]; data.set_dir(saved[3]) end)

   local function ds() return data.TensorDataset(fnn.randn(5, 2), fnn.randperm(5)) end
   local function loader() return data.DataLoader(ds(), 2) end
   local function text() return data.TextDataset('abcdefgh', 2, {text = true}) end
   local function pics() return data.ImageFolder('spec/fixtures', {transform = T.Compose{T.Resize{4, 4}, T.Grayscale()}}) end
   local function ids() local a = ffi.new('int64_t[2]'); a[0], a[1] = 2, 1; return a end
   local function pic() return fnn.rand(3, 4, 4) end
   local quiet = {progress = false, connect_timeout = 1}

   -- label -> {function, args maker, op name in the message; raises = true: the valid call may
   -- fail for its own reason (it downloads), never for its arity}
   local C = {
      ['data.DataLoader'] = {data.DataLoader, function() return pack(ds(), 2, {shuffle = true}) end},
      ['DataLoader:shuffle'] = {data.DataLoader.shuffle, function() return pack(loader(), true) end},
      ['DataLoader:drop_last'] = {data.DataLoader.drop_last, function() return pack(loader(), true) end},
      ['DataLoader:seed'] = {data.DataLoader.seed, function() return pack(loader(), 3) end},
      ['DataLoader:to_device'] = {data.DataLoader.to_device, function() return pack(loader(), 'cpu') end},
      ['DataLoader:reuse'] = {data.DataLoader.reuse, function() return pack(loader(), true) end},
      ['DataLoader:prefetch'] = {data.DataLoader.prefetch, function() return pack(loader(), 2, {workers = 1}) end},
      ['DataLoader:is_prefetching'] = {data.DataLoader.is_prefetching, function() return pack(loader()) end},
      ['DataLoader:shard'] = {data.DataLoader.shard, function() return pack(loader(), 0, 2) end},
      ['DataLoader:len'] = {data.DataLoader.len, function() return pack(loader()) end},
      ['DataLoader:iter'] = {data.DataLoader.iter, function() return pack(loader()) end},
      ['labels'] = {function(b, ...) return b:labels(...) end, function() local b = loader():iter()(); return pack(b) end},
      ['data.TensorDataset'] = {data.TensorDataset, function() return pack(fnn.ones(3, 2), fnn.ones(3)) end},
      ['TensorDataset:len'] = {data.TensorDataset.len, function() return pack(ds()) end},
      ['TensorDataset:get'] = {data.TensorDataset.get, function() return pack(ds(), 2) end},
      ['TensorDataset:take'] = {data.TensorDataset.take, function() return pack(ds(), 2, ids()) end},
      ['TensorDataset:prefetch_source'] = {data.TensorDataset.prefetch_source, function() return pack(ds()) end},
      ['data.TextDataset'] = {data.TextDataset, function() return pack('abcdefgh', 2, {text = true}) end},
      ['TextDataset:len'] = {data.TextDataset.len, function() return pack(text()) end},
      ['TextDataset:vocab_size'] = {data.TextDataset.vocab_size, function() return pack(text()) end},
      ['TextDataset:encode'] = {data.TextDataset.encode, function() return pack(text(), 'abc') end},
      ['TextDataset:decode'] = {data.TextDataset.decode, function() return pack(text(), {1, 2}) end},
      ['TextDataset:window'] = {data.TextDataset.window, function() return pack(text(), 2) end},
      ['TextDataset:get'] = {data.TextDataset.get, function() return pack(text(), 2) end},
      ['TextDataset:take'] = {data.TextDataset.take, function() return pack(text(), 2, ids()) end},
      ['TextDataset:prefetch_source'] = {data.TextDataset.prefetch_source, function() return pack(text()) end},
      ['data.ImageFolder'] = {data.ImageFolder, function() return pack('spec/fixtures', {extensions = {'.jpg'}}) end},
      ['ImageFolder:len'] = {data.ImageFolder.len, function() return pack(pics()) end},
      ['ImageFolder:get'] = {data.ImageFolder.get, function() return pack(pics(), 1) end},
      ['ImageFolder:take'] = {data.ImageFolder.take, function() return pack(pics(), 2, ids(), 7) end},
      ['ImageFolder:prefetch_images'] = {data.ImageFolder.prefetch_images, function()
         local pp = ffi.new('fnn_prefetch *[1]')
         local seeds = ffi.new('uint64_t[1]')
         return pack(pics(), pp, 2, ids(), 2, 1, 1, seeds)
      end, free = function(args) require('fastnn.C').fnn_prefetch_free(args[2][0]) end},
      ['data.CsvDataset'] = {data.CsvDataset, function() return pack(csv, {header = true}) end},
      ['data.dir'] = {data.dir, function() return pack() end},
      ['data.set_dir'] = {data.set_dir, function() return pack(dir .. '/data') end},
      ['data.try_download'] = {data.try_download, function() return pack(NOWHERE .. 'x', dir .. '/dl', quiet) end},
      ['data.download'] = {data.download, function() return pack(NOWHERE .. 'x', dir .. '/dl', quiet) end,
                           raises = true},
      ['data.file_digest'] = {data.file_digest, function() return pack(csv, 'md5') end},
      ['transforms.state'] = {T.state, function() return pack(3) end},
      ['transforms.is_transform'] = {T.is_transform, function() return pack(T.Grayscale()) end},
      ['transforms.Compose'] = {T.Compose, function() return pack({T.Grayscale()}) end},
      ['transforms.Resize'] = {T.Resize, function() return pack({2, 3}) end},
      ['transforms.CenterCrop'] = {T.CenterCrop, function() return pack(2) end},
      ['transforms.RandomResizedCrop'] = {T.RandomResizedCrop, function() return pack(2, {scale = {0.5, 1}}) end},
      ['transforms.RandomHorizontalFlip'] = {T.RandomHorizontalFlip, function() return pack(0.5) end},
      ['transforms.ColorJitter'] = {T.ColorJitter, function() return pack({brightness = 0.1}) end},
      ['transforms.Normalize'] = {T.Normalize, function() return pack({0.5}, {0.25}) end},
      ['transforms.Grayscale'] = {T.Grayscale, function() return pack() end},
      ['transforms.Grayscale:apply'] = {function(t, ...) return t:apply(...) end,
                                        function() return pack(T.Grayscale(), pic(), 3) end, as = 'transforms.Grayscale'},
      ['transforms.Grayscale()'] = {function(t, ...) return t(...) end, function() return pack(T.Grayscale(), pic(), 3) end,
                                    as = 'transforms.Grayscale'},
   }
   for _, name in ipairs{'Mnist', 'FashionMnist'} do
      local D = data[name]
      C[name .. '.set_mirrors'] = {D.set_mirrors, function() return pack({NOWHERE}) end}
      C[name .. '.dir'] = {D.dir, function() return pack() end}
      C[name .. '.dirs'] = {D.dirs, function() return pack() end}
      C[name .. '.try_load'] = {D.try_load, function() return pack('test', quiet) end}
      C[name .. '.load'] = {D.load, function() return pack('test', quiet) end, raises = true}
   end

   -- op name in the message: the label up to a trailing "()" or ":apply"
   local function op_of(label, case) return case.as or label end

   it("refuses an argument past the last of every function, at the caller's line, naming it", function()
      local labels = {}
      for label in pairs(C) do labels[#labels + 1] = label end
      table.sort(labels)
      for i, label in ipairs(labels) do
         local case = C[label]
         local f, make = case[1], case[2]
         for _, trailing_nil in ipairs{false, true} do
            local args = make()
            if trailing_nil then args.n = args.n + 1 end
            local ok, err = call('data', label, f, args, args.n)
            if case.free and ok then case.free(args) end
            if not case.raises then assert(ok, label .. ': the valid call failed: ' .. tostring(err)) end
            if not ok then assert.is_nil(err:find('unexpected argument', 1, true), label .. ': ' .. err) end
         end
         local args = make()
         local extra = EXTRAS[i % #EXTRAS + 1]
         if type(extra) == 'function' then extra = extra() end
         args[args.n + 1] = extra
         local ok, err, line = call('data', label, f, args, args.n + 1)
         assert(not ok, label .. ': an extra argument was accepted')
         local want = ('%s: unexpected argument %d (%s)'):format(op_of(label, case), args.n + 1, describe_value(extra))
         assert(err:find(want, 1, true), label .. ': expected "' .. want .. '", got: ' .. err)
         assert.equals(THIS .. ':' .. line .. ': ', err:match('^[^:]+:%d+: '), label .. ': raised at ' .. err)
      end
   end)

   it('lists every public function of the data module (completeness)', function()
      local listed = {}
      for _, case in pairs(C) do listed[case[1]] = true end
      local missing = {}
      local function walk(prefix, t, sep)
         for name, f in pairs(t) do
            if type(f) == 'function' and type(name) == 'string' and not name:match('^_') then
               if not listed[f] then missing[#missing + 1] = prefix .. sep .. name end
            end
         end
      end
      for _, name in ipairs{'DataLoader', 'TensorDataset', 'TextDataset', 'ImageFolder', 'CsvDataset'} do
         walk(name, data[name], ':')
      end
      walk('data', data, '.')
      walk('transforms', T, '.')
      walk('Mnist', data.Mnist, '.')
      walk('FashionMnist', data.FashionMnist, '.')
      table.sort(missing)
      assert.same({}, missing, 'data functions without an arity case: ' .. table.concat(missing, ', '))
   end)
end)

-- ---------------------------------------------------------------------------------------------
-- Decoding (forward_cached, new_cache, nn.StackCache, nn.Sampler, nn.BeamSearch), the functional
-- model API (nn.GraphBuilder, nn.Graph) and the Keras-style callbacks, metrics and progress object
-- refuse an argument past their last at the caller's line, as the blocks above. R is driven like
-- ROWS; the walk lists every public function of these classes and modules (and each class that
-- builds with __new or __init, as its own constructor) and fails on one that no row calls.
describe('arity: decoding, graphs, callbacks, metrics, progress', function()
   local nn, optim = fnn.nn, fnn.optim
   local callbacks, metrics = nn.callbacks, nn.metrics
   local progress = require 'fastnn.keras.progress'
   local tmp = os.tmpname()
   os.remove(tmp)
   os.execute('mkdir -p ' .. tmp)
   teardown(function() os.execute('rm -rf ' .. tmp) end)
   local function path(name) return tmp .. '/' .. name end
   local function method(obj, name, op, ...) return obj[name], pack(obj, ...), op, true end

   -- decoding: a causal stack of width 4 (2 heads of 2), its layers' caches, one position at a time
   local function kv() return {k = fnn.zeros(1, 2, 8, 2), v = fnn.zeros(1, 2, 8, 2)} end
   local function stack() return nn.TransformerStack.causal(4, 2, 8, 2):eval() end
   local function x1() return fnn.randn(1, 1, 4) end
   local function logprobs() return fnn.tensor({0.2, 0.5, 0.3}):log() end
   -- a graph of one inlet [2, 3] and one Linear
   local function builder()
      local b = nn.GraphBuilder()
      local input = b:input({2, 3})
      return b, input, b:add(nn.Linear(3, 2), input)
   end
   local function graph()
      local b, _, h = builder()
      local g = b:build(h)
      g:compile{optimizer = 'sgd', loss = 'mse'}
      return g
   end
   local function model()   -- a compiled model with an optimizer, for the callbacks' hooks
      local m = nn.Sequential(nn.Linear(3, 2))
      m:compile{optimizer = 'sgd', loss = 'mse'}
      return m
   end
   local function hooked(cb) cb:set_model(model()); return cb end
   local function bar() return progress.new{verbose = 0, epochs = 1, steps = 2, keys = function() return {} end} end

   local R = {
      ['MultiheadAttention:forward_cached'] = function()
         return method(nn.MultiheadAttention(4, 2):eval(), 'forward_cached', 'nn.MultiheadAttention:forward_cached',
                       x1(), kv(), 1)
      end,
      ['TransformerEncoderLayer:forward_cached'] = function()
         return method(nn.TransformerEncoderLayer(4, 2, 8, {dropout = 0}):eval(), 'forward_cached',
                       'nn.TransformerEncoderLayer:forward_cached', x1(), kv(), 1)
      end,
      ['TransformerStack:forward_cached'] = function()
         local s = stack()
         return method(s, 'forward_cached', 'nn.TransformerStack:forward_cached', x1(), s:new_cache())
      end,
      ['TransformerStack:new_cache'] = function()
         return method(stack(), 'new_cache', 'nn.TransformerStack:new_cache', {capacity = 4})
      end,
      ['TransformerStack.causal'] = function()
         return nn.TransformerStack.causal, pack(4, 2, 8, 1, 0), 'nn.TransformerStack.causal'
      end,
      ['StackCache'] = function() return nn.StackCache, pack(2, 2, 2, {capacity = 4}), 'nn.StackCache' end,
      ['StackCache:len'] = function() return method(stack():new_cache(), 'len', 'nn.StackCache:len') end,
      ['StackCache:capacity'] = function() return method(stack():new_cache(), 'capacity', 'nn.StackCache:capacity') end,
      ['StackCache:reset'] = function() return method(stack():new_cache(), 'reset', 'nn.StackCache:reset') end,
      ['Sampler'] = function() return nn.Sampler, pack({temperature = 0.5}), 'nn.Sampler' end,
      ['Sampler:temperature'] = function() return method(nn.Sampler(), 'temperature', 'Sampler:temperature', 0.8) end,
      ['Sampler:top_k'] = function() return method(nn.Sampler(), 'top_k', 'Sampler:top_k', 2) end,
      ['Sampler:top_p'] = function() return method(nn.Sampler(), 'top_p', 'Sampler:top_p', 0.9) end,
      ['Sampler:settings'] = function() return method(nn.Sampler(), 'settings', 'Sampler:settings') end,
      ['Sampler:sample'] = function() return method(nn.Sampler(), 'sample', 'Sampler:sample', logprobs()) end,
      ['BeamSearch'] = function() return nn.BeamSearch, pack({width = 2, max_len = 3}), 'nn.BeamSearch' end,
      ['BeamSearch:search'] = function()
         return method(nn.BeamSearch{width = 2, max_len = 3}, 'search', 'BeamSearch:search', logprobs, {1})
      end,
      -- the functional model API
      ['GraphBuilder'] = function() return nn.GraphBuilder, pack(), 'nn.GraphBuilder' end,
      ['GraphBuilder:input'] = function()
         return method(nn.GraphBuilder(), 'input', 'GraphBuilder:input', {2, 3}, {name = 'x'})
      end,
      ['GraphBuilder:add'] = function()
         local b, input = builder()
         return method(b, 'add', 'GraphBuilder:add', nn.ReLU(), input, {name = 'act'})
      end,
      ['GraphBuilder:build'] = function()
         local b, _, h = builder()
         return method(b, 'build', 'GraphBuilder:build', {h})
      end,
      ['Graph:forward'] = function() return method(graph(), 'forward', 'Graph:forward', fnn.randn(2, 3)) end,
      ['Graph:forward{}'] = function() return method(graph(), 'forward', 'Graph:forward', {fnn.randn(2, 3)}) end,
      ['Graph:output_shape'] = function() return method(graph(), 'output_shape', 'Graph:output_shape', {{5, 3}}) end,
      -- Graph's Keras-style methods are made by the factory whose Sequential rows are above (keras:*)
      ['Graph:fit'] = function()
         return method(graph(), 'fit', 'Graph:fit', {fnn.randn(4, 3)}, {fnn.randn(4, 2)}, {epochs = 1, verbose = 0})
      end,
      ['Graph:predict'] = function()
         return method(graph(), 'predict', 'Graph:predict', {fnn.randn(4, 3)}, {batch_size = 2})
      end,
      -- the callbacks: the constructors, then each class's hooks with the arguments fit passes
      ['callbacks.Callback'] = function() return callbacks.Callback, pack({}), 'nn.callbacks.Callback' end,
      ['callbacks.LambdaCallback'] = function()
         return callbacks.LambdaCallback, pack({on_epoch_end = function() end}), 'nn.callbacks.LambdaCallback'
      end,
      ['callbacks.EarlyStopping'] = function()
         return callbacks.EarlyStopping, pack({patience = 1}), 'nn.callbacks.EarlyStopping'
      end,
      ['callbacks.ModelCheckpoint'] = function()
         return callbacks.ModelCheckpoint, pack(path('m-{epoch}.fdl'), {save_weights_only = true}),
                'nn.callbacks.ModelCheckpoint'
      end,
      ['callbacks.LearningRateScheduler'] = function()
         return callbacks.LearningRateScheduler, pack(function(_, lr) return lr end, {per = 'epoch'}),
                'nn.callbacks.LearningRateScheduler'
      end,
      ['callbacks.ReduceLROnPlateau'] = function()
         return callbacks.ReduceLROnPlateau, pack({patience = 1}), 'nn.callbacks.ReduceLROnPlateau'
      end,
      ['callbacks.CSVLogger'] = function()
         return callbacks.CSVLogger, pack(path('log.csv'), {append = true}), 'nn.callbacks.CSVLogger'
      end,
      ['callbacks.TensorBoard'] = function()
         return callbacks.TensorBoard, pack({log_dir = path('tb')}), 'nn.callbacks.TensorBoard'
      end,
      ['callbacks.History'] = function() return callbacks.History, pack(), 'nn.callbacks.History' end,
      ['Callback:set_model'] = function()
         return method(callbacks.Callback(), 'set_model', 'nn.callbacks.Callback:set_model', model())
      end,
      ['EarlyStopping:on_train_begin'] = function()
         return method(hooked(callbacks.EarlyStopping()), 'on_train_begin',
                       'nn.callbacks.EarlyStopping:on_train_begin', {})
      end,
      ['EarlyStopping:on_epoch_end'] = function()
         local cb = hooked(callbacks.EarlyStopping())
         cb:on_train_begin({})
         return method(cb, 'on_epoch_end', 'nn.callbacks.EarlyStopping:on_epoch_end', 1, {val_loss = 1})
      end,
      ['ModelCheckpoint:path_for'] = function()
         return method(callbacks.ModelCheckpoint(path('c-{epoch:03d}.fdl')), 'path_for',
                       'nn.callbacks.ModelCheckpoint:path_for', 7)
      end,
      ['ModelCheckpoint:on_epoch_end'] = function()
         return method(hooked(callbacks.ModelCheckpoint(path('d.fdl'))), 'on_epoch_end',
                       'nn.callbacks.ModelCheckpoint:on_epoch_end', 1, {val_loss = 1})
      end,
      ['LearningRateScheduler:on_epoch_begin'] = function()
         return method(hooked(callbacks.LearningRateScheduler(function(_, lr) return lr / 2 end)), 'on_epoch_begin',
                       'nn.callbacks.LearningRateScheduler:on_epoch_begin', 1, {})
      end,
      ['LearningRateScheduler:on_batch_begin'] = function()
         return method(hooked(callbacks.LearningRateScheduler(optim.StepDecay(0.1, 10))), 'on_batch_begin',
                       'nn.callbacks.LearningRateScheduler:on_batch_begin', 1, {})
      end,
      ['LearningRateScheduler:on_epoch_end'] = function()
         return method(hooked(callbacks.LearningRateScheduler(optim.StepDecay(0.1, 10))), 'on_epoch_end',
                       'nn.callbacks.LearningRateScheduler:on_epoch_end', 1, {})
      end,
      ['ReduceLROnPlateau:on_train_begin'] = function()
         return method(hooked(callbacks.ReduceLROnPlateau()), 'on_train_begin',
                       'nn.callbacks.ReduceLROnPlateau:on_train_begin', {})
      end,
      ['ReduceLROnPlateau:on_epoch_end'] = function()
         local cb = hooked(callbacks.ReduceLROnPlateau())
         cb:on_train_begin({})
         return method(cb, 'on_epoch_end', 'nn.callbacks.ReduceLROnPlateau:on_epoch_end', 1, {val_loss = 1})
      end,
      ['CSVLogger:on_train_begin'] = function()
         return method(hooked(callbacks.CSVLogger(path('a.csv'))), 'on_train_begin',
                       'nn.callbacks.CSVLogger:on_train_begin', {})
      end,
      ['CSVLogger:on_epoch_end'] = function()
         local cb = hooked(callbacks.CSVLogger(path('b.csv')))
         cb:on_train_begin({})
         return method(cb, 'on_epoch_end', 'nn.callbacks.CSVLogger:on_epoch_end', 1, {loss = 1})
      end,
      ['CSVLogger:on_train_end'] = function()
         local cb = hooked(callbacks.CSVLogger(path('c.csv')))
         cb:on_train_begin({})
         return method(cb, 'on_train_end', 'nn.callbacks.CSVLogger:on_train_end', {})
      end,
      ['TensorBoard:on_train_begin'] = function()
         return method(callbacks.TensorBoard(path('tb1')), 'on_train_begin', 'nn.callbacks.TensorBoard:on_train_begin',
                       {})
      end,
      ['TensorBoard:on_epoch_end'] = function()
         local cb = callbacks.TensorBoard(path('tb2'))
         cb.model = model()
         cb:on_train_begin({})
         return method(cb, 'on_epoch_end', 'nn.callbacks.TensorBoard:on_epoch_end', 1, {loss = 1, val_loss = 2})
      end,
      ['TensorBoard:on_train_end'] = function()
         local cb = callbacks.TensorBoard(path('tb3'))
         cb:on_train_begin({})
         return method(cb, 'on_train_end', 'nn.callbacks.TensorBoard:on_train_end', {})
      end,
      ['History:on_epoch_end'] = function()
         return method(callbacks.History(), 'on_epoch_end', 'nn.callbacks.History:on_epoch_end', 1, {loss = 1})
      end,
      -- the metrics' own functions (each class's below)
      ['metrics.get'] = function() return metrics.get, pack('accuracy', 1), 'nn.metrics.get' end,
      -- fit's progress object and its module's helpers
      ['progress.new'] = function()
         return progress.new, pack({verbose = 0, epochs = 1, steps = 2, keys = function() return {} end}),
                'progress.new'
      end,
      ['progress.now'] = function() return progress.now, pack(), 'progress.now' end,
      ['progress.is_terminal'] = function() return progress.is_terminal, pack(), 'progress.is_terminal' end,
      ['progress.fmt_time'] = function() return progress.fmt_time, pack(1.5), 'progress.fmt_time' end,
      ['progress.figures'] = function() return progress.figures, pack({'loss'}, {loss = 1}), 'progress.figures' end,
      ['Progress:on_epoch_begin'] = function()
         return method(bar(), 'on_epoch_begin', 'Progress:on_epoch_begin', 1, {})
      end,
      ['Progress:on_batch_end'] = function()
         local p = bar()
         p:on_epoch_begin(1, {})
         return method(p, 'on_batch_end', 'Progress:on_batch_end', 1, {loss = 1})
      end,
      ['Progress:on_epoch_end'] = function()
         local p = bar()
         p:on_epoch_begin(1, {})
         return method(p, 'on_epoch_end', 'Progress:on_epoch_end', 1, {loss = 1})
      end,
   }
   -- every metric class: its constructor, update with a batch it takes, result and reset
   local r = fnn.randn
   local function ids() return {1, 2, 3, 1} end
   local function probs() return fnn.rand(4, 1) end
   local BATCH = {
      Accuracy = function() return r(4, 3), ids() end,
      SparseCategoricalAccuracy = function() return r(4, 3), ids() end,
      SparseTopKCategoricalAccuracy = function() return r(4, 3), ids() end,
      CategoricalAccuracy = function() return r(4, 3), fnn.eye(4, 3) end,
      TopKCategoricalAccuracy = function() return r(4, 3), fnn.eye(4, 3) end,
      BinaryAccuracy = function() return probs(), fnn.ones(4, 1) end,
      MeanSquaredError = function() return r(4, 3), r(4, 3) end,
      MeanAbsoluteError = function() return r(4, 3), r(4, 3) end,
      Precision = function() return probs(), fnn.ones(4, 1) end,
      Recall = function() return probs(), fnn.ones(4, 1) end,
      F1Score = function() return probs(), fnn.ones(4, 1) end,
      AUC = function() return probs(), fnn.tensor({{1}, {0}, {1}, {0}}) end,
      Mean = function() return 2.5, 2 end,
      Average = function() return 2.5, 2 end,
   }
   for name, batch in pairs(BATCH) do
      local cls = metrics[name]
      local op = 'nn.metrics.' .. name
      R['metrics.' .. name] = function() return cls, pack({name = 'm'}), op end
      local function fed()
         local m = cls()
         m:update(batch())
         return m
      end
      R[name .. ':update'] = function() return method(cls(), 'update', op .. ':update', batch()) end
      R[name .. ':result'] = function() return method(fed(), 'result', op .. ':result') end
      R[name .. ':reset'] = function() return method(fed(), 'reset', op .. ':reset') end
   end
   local made = 0
   R['Metric:extend'] = function()
      made = made + 1   -- a class per call: each declares its options under its own name
      return method(metrics.Metric, 'extend', 'nn.metrics.Metric:extend', 'ArityMetric' .. made, 'arity_metric', {})
   end

   -- public functions of these classes and modules that no row calls, each with its reason
   local EXEMPT = {
      forward = "a layer's forward: nn.Module's one check for every class (the block above)",
      short_str = "a layer writer's hook; printing calls it with exactly self",
      ['Metric()'] = 'the base class: a metric is made by a class of Metric:extend (their constructors are rows)',
      ['Progress()'] = 'fit makes its progress object with progress.new (a row), not by calling the class',
   }
   -- the classes walked: name, class, whether Module's construct checks its constructor
   local CLASSES = {
      {'MultiheadAttention', nn.MultiheadAttention, true},
      {'TransformerEncoderLayer', nn.TransformerEncoderLayer, true},
      {'TransformerDecoderLayer', nn.TransformerDecoderLayer, true}, {'TransformerStack', nn.TransformerStack, true},
      {'TransformerEncoder', nn.TransformerEncoder, true}, {'TransformerDecoder', nn.TransformerDecoder, true},
      {'StackCache', nn.StackCache}, {'Sampler', nn.Sampler}, {'BeamSearch', nn.BeamSearch},
      {'GraphBuilder', nn.GraphBuilder}, {'Graph', nn.Graph, true}, {'Progress', getmetatable(bar())},
   }
   for name, v in pairs(callbacks) do
      if type(v) == 'table' and rawget(v, '_name') then CLASSES[#CLASSES + 1] = {name, v} end
   end
   for name, v in pairs(metrics) do
      if type(v) == 'table' and rawget(v, '_name') then CLASSES[#CLASSES + 1] = {name, v} end
   end
   local MODULES = {{'callbacks', callbacks}, {'metrics', metrics}, {'progress', progress}}

   -- label -> the function (or class) the walk found
   local function walked()
      local list = {}
      for _, c in ipairs(CLASSES) do
         local name, cls, module_init = c[1], c[2], c[3]
         for k, f in pairs(cls) do
            if type(f) == 'function' and type(k) == 'string' and not k:match('^_') then
               list[name .. ':' .. k] = f
            end
         end
         if not module_init then list[name .. '()'] = cls end   -- calling the class builds one
      end
      for _, m in ipairs(MODULES) do
         for k, f in pairs(m[2]) do
            if type(f) == 'function' and not k:match('^_') then list[m[1] .. '.' .. k] = f end
         end
      end
      return list
   end

   local function exempt(label, f)
      if EXEMPT[label] or EXEMPT[label:match(':(.*)$') or ''] then return true end
      -- Graph's Keras-style methods: fastnn/keras/model.lua's checked factory (its rows: keras:*, Graph:fit)
      return label:match('^Graph:') and debug.getinfo(f, 'S').source:find('fastnn/keras/model.lua', 1, true) ~= nil
   end

   it("refuses an argument past the last, at the caller's line, naming the function and the position", function()
      local keys = {}
      for k in pairs(R) do keys[#keys + 1] = k end
      table.sort(keys)
      for i, key in ipairs(keys) do
         local f, args, as, is_method = R[key]()
         local ok, err = pcall(f, unpack(args, 1, args.n))
         if not ok then error(key .. ': the valid call failed: ' .. tostring(err)) end
         f, args = R[key]()
         ok, err = pcall(f, unpack(args, 1, args.n + 1))
         if not ok then error(key .. ': a trailing nil was refused: ' .. tostring(err)) end
         f, args = R[key]()
         local extra = EXTRAS[i % #EXTRAS + 1]
         if type(extra) == 'function' then extra = extra() end
         args[args.n + 1] = extra
         local line
         ok, err, line = call('', key, f, args, args.n + 1)
         assert(not ok, key .. ': an extra argument was accepted')
         local pos = is_method and args.n or args.n + 1
         local want = ('%s: unexpected argument %d (%s)'):format(as, pos, describe_value(extra))
         assert(tostring(err):find(want, 1, true), key .. ': expected "' .. want .. '", got: ' .. tostring(err))
         assert.equals(THIS .. ':' .. line .. ': ', err:match('^[^:]+:%d+: '), key .. ': raised at ' .. err)
         assert.is_nil(err:find('0x%x+'), key .. ': an address in ' .. err)
      end
   end)

   it('refuses what follows the inputs of a graph, behind nils too, and takes trailing nils', function()
      local g = graph()
      local x = fnn.randn(2, 3)
      local function err_of(...) return select(2, pcall(g.forward, g, ...)) end
      assert.matches('Graph:forward: unexpected argument 4 (5)', err_of(x, nil, nil, 5), 1, true)
      assert.matches('Graph:forward: unexpected argument 2 (a tensor [2,3])', err_of({x}, x), 1, true)
      assert.matches('Graph:forward: unexpected argument 3 (true)', err_of({x}, nil, true), 1, true)
      assert.same({2, 2}, g(x, nil, nil):shape())
      assert.same({2, 2}, g({x}, nil):shape())
   end)

   it('lists every public function of these classes and modules (completeness)', function()
      local called = {}
      for _, make in pairs(R) do called[(make())] = true end
      local missing, n = {}, 0
      for label, f in pairs(walked()) do
         if not called[f] and not exempt(label, f) then missing[#missing + 1] = label end
         n = n + 1
      end
      assert.is_true(n > 100, 'only ' .. n .. ' functions walked')
      table.sort(missing)
      assert.same({}, missing, 'functions without an arity row: ' .. table.concat(missing, ', '))
   end)
end)
