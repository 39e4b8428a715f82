-- char_lm: a small GPT (a decoder-only transformer) learns a text character by character, then
-- writes new text with nn.Sampler. Its training survives Ctrl-C: the state is saved and the next
-- run goes on from the same step with the same AdamW moments, batches and random stream.
--
--   fastnn-lua examples/char_lm.lua                 full run: 2 layers, width 128, 1500 steps
--                                                   (about 5 CPU-minutes on 2 cores)
--   fastnn-lua examples/char_lm.lua --quick         a tiny model for 200 steps (seconds, for CI)
--   fastnn-lua examples/char_lm.lua --text my.txt --steps 3000 --prompt 'Once'
--   Ctrl-C, then the same command again             resumes (--fresh starts over); --help lists
--                                                   the options
--
-- The text defaults to examples/data/python_reference.txt (see examples/data/README.md); its last
-- 10% is held out. Prints: the unigram entropy of the training text in nats per character (the
-- loss of the best model that ignores context: a validation loss below it means the model uses
-- context), the training loss every --log-every steps and the held-out loss every --eval-every,
-- `resumed at step K` / `interrupted at step K, saved PATH` (then exit status 130), a
-- `final step N  loss L  validation V  checksum S` line (S sums the parameters: equal runs print
-- equal lines), then the prompt and --chars generated characters.
-- Writes under --out (default ./fastnn-out): char_lm_loss.png (training and validation loss per
-- step against the unigram entropy) and the training state char_lm.fdl (char_lm_quick.fdl with
-- --quick; --state names another file). With --tensorboard DIR it also logs the training and
-- validation loss, the learning rate and the generated text for `tensorboard --logdir DIR`.
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim, data = fnn.nn, fnn.optim, fnn.data
local cli, pictures = require 'common.cli', require 'common.pictures'
local ffi = require 'ffi'

io.stdout:setvbuf('line')          -- progress lines reach a pipe (a spec, tee) as they happen

local here = arg[0]:match('^(.*)/') or '.'
local cfg = cli.parse{
   name = 'char_lm', about = 'A small GPT learns a text character by character, survives Ctrl-C, then writes text.',
   options = {
      {'text', '', 'training text (default: examples/data/python_reference.txt)', 'FILE'},
      {'state', '', 'training state file (default: OUT/char_lm.fdl, OUT/char_lm_quick.fdl with --quick)', 'FILE'},
      {'resume', false, 'require the state file and resume from it (by default it is used when it exists)'},
      {'fresh', false, 'ignore an existing state file and start over'},
      {'steps', 1500, 'training steps in all, counting those already done'},
      {'save_every', 200, 'save the training state every N steps'},
      {'log_every', 50, 'print the loss every N steps'},
      {'eval_every', 100, 'measure the loss on the held-out text every N steps'},
      {'batch', 32, 'windows per step'},
      {'context', 64, 'characters per window'},
      {'width', 128, 'transformer width'},
      {'heads', 4, 'attention heads'},
      {'layers', 2, 'transformer layers'},
      {'dropout', 0.1, 'dropout in the transformer (against overfitting a small text)'},
      {'lr', 3e-3, 'peak AdamW learning rate (linear warm-up, then cosine decay)'},
      {'chars', 400, 'characters to generate at the end'},
      {'prompt', '', 'the text generation starts from (default: the first line of the text)', 'TEXT'},
      {'temperature', 0.8, 'sampling temperature (0 is greedy)'},
      {'top_k', 0, 'sample among the N likeliest characters only (0: all)'},
      {'precision', 'float32', "'float32', or 'autocast_bf16' (each step's forward and loss in fnn.autocast('bf16'))",
       'MODE'},
      {'tensorboard', '', 'also log losses, learning rate and the generated text to DIR for TensorBoard', 'DIR'},
   },
   quick = {steps = 200, save_every = 50, log_every = 20, eval_every = 100, batch = 8, context = 32, width = 32,
            heads = 2, layers = 1, chars = 80},
}
if cfg.precision ~= 'float32' and cfg.precision ~= 'autocast_bf16' then
   io.stderr:write(("char_lm: --precision is '%s', expected 'float32' or 'autocast_bf16'\n"):format(cfg.precision))
   os.exit(2)
end
if cfg.text == '' then cfg.text = here .. '/data/python_reference.txt' end
if cfg.state == '' then cfg.state = pictures.path(cfg, cfg.quick and 'char_lm_quick.fdl' or 'char_lm.fdl')
else os.execute("mkdir -p '" .. (cfg.state:match('^(.*)/') or '.'):gsub("'", [['\'']]) .. "'") end
if cfg.top_k == 0 then cfg.top_k = nil end
-- TensorBoard's event file (a resumed run adds a new file to the same run; TensorBoard joins them)
local tb = cfg.tensorboard ~= '' and fnn.tensorboard.SummaryWriter(cfg.tensorboard) or nil

-- ---------------------------------------------------------------------------
-- the text: the first 90% to train on, the rest (from a line start) held out for validation,
-- both encoded with the whole text's vocabulary; and the loss to beat

local f = assert(io.open(cfg.text, 'rb'))
local text = f:read('*a')
f:close()
local cut = text:find('\n', math.floor(#text * 0.9), true) or #text
local vocab = data.TextDataset(text, 1, {text = true})
local ds = data.TextDataset(text:sub(1, cut), cfg.context, {text = true, vocab = vocab})
local val = data.TextDataset(text:sub(cut + 1), cfg.context, {text = true, vocab = vocab})
local V = ds:vocab_size()

-- H = -sum p(c) log p(c) over the characters' frequencies, in nats like cross_entropy
local function unigram_entropy(tokens)
   local counts, n = {}, 0
   for _, id in ipairs(tokens:to_table()) do
      counts[id] = (counts[id] or 0) + 1
      n = n + 1
   end
   local h = 0
   for _, c in pairs(counts) do h = h - c / n * math.log(c / n) end
   return h
end
local entropy = unigram_entropy(ds.tokens)
print(('text %s: %d characters (%d to train on, %d held out), vocabulary %d'):format(cfg.text,
   vocab.n_tokens, ds.n_tokens, val.n_tokens, V))
print(('unigram entropy of the training text %.4f nats/char (%.3f bits/char)'):format(entropy, entropy / math.log(2)))

-- ---------------------------------------------------------------------------
-- the model: token + position embeddings, a causal pre-norm transformer stack, a linear head

local GPT = nn.Module:extend('GPT')

function GPT:__init(vocab, context, width, heads, layers, dropout)
   self.tok = nn.Embedding(vocab, width)
   self.pos = nn.Embedding(context, width)
   self.stack = nn.TransformerStack.causal(width, heads, 4 * width, layers, dropout)
   self.head = nn.Linear(width, vocab)
end

-- ids int64 [B, T] (T <= context) -> logits [B, T, vocab]
function GPT:forward(ids)
   local t = ids:size(2)
   local x = self.tok(ids) + self.pos(fnn.arange(1, t + 1):reshape(1, t))
   return self.head(self.stack(x))
end

fnn.manual_seed(cfg.seed)
local model = GPT(V, cfg.context, cfg.width, cfg.heads, cfg.layers, cfg.dropout)
local opt = optim.AdamW(model:parameters(), cfg.lr, {weight_decay = 0.01})
print(('model: %d parameters, context %d, width %d, %d heads, %d layers, dropout %g; batch %d, %d steps'):format(
   model:num_parameters(), cfg.context, cfg.width, cfg.heads, cfg.layers, cfg.dropout, cfg.batch, cfg.steps))

-- the learning rate of step s: linear warm-up over 5% of the steps, then cosine decay to 10%
local function lr_at(s)
   local warm = math.max(1, math.floor(cfg.steps * 0.05))
   if s <= warm then return cfg.lr * s / warm end
   local t = (s - warm) / math.max(1, cfg.steps - warm)
   return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))
end

-- the windows of step s, at random. Each step first seeds fastnn's generator from (seed, s), so
-- its batch and its dropout masks depend on the step alone: a run resumed at any step draws what
-- the uninterrupted run drew, and an interrupt in the middle of a step leaves nothing to rewind.
local window_ids = ffi.new('int64_t[?]', cfg.batch)
local function batch_at(s)
   fnn.manual_seed(cfg.seed * 1000003 + s)
   local u = fnn.rand(cfg.batch):to_table()
   for b = 1, cfg.batch do window_ids[b - 1] = math.floor(u[b] * ds:len()) + 1 end
   return ds:take(cfg.batch, window_ids)
end

local ce = nn.cross_entropy

-- the mean loss over fixed, evenly spread windows of the held-out text (no random numbers used)
local VAL_BATCHES = 8
local function validation_loss()
   local sum = 0
   model:eval()
   fnn.no_grad(function()
      for k = 0, VAL_BATCHES - 1 do
         for b = 0, cfg.batch - 1 do
            local j = k * cfg.batch + b
            window_ids[b] = math.floor(j * (val:len() - 1) / (VAL_BATCHES * cfg.batch - 1)) + 1
         end
         local x, y = val:take(cfg.batch, window_ids)
         sum = sum + ce(model(x):reshape(-1, V), y:reshape(-1)):item()
      end
   end)
   model:train()
   return sum / VAL_BATCHES
end

local function checksum()
   local sum, sq = 0, 0
   for _, p in ipairs(model:parameters()) do
      local t = p:tensor()
      sum = sum + t:sum():item()
      sq = sq + (t * t):sum():item()
   end
   return ('%.9g/%.9g'):format(sum, sq)
end

-- ---------------------------------------------------------------------------
-- training state: fnn.save_training keeps the model, AdamW's moments and step counts, the step
-- and fastnn's random state (atomically: a crash mid-save leaves the earlier file); the losses so
-- far ride along as metadata for the loss curve

local losses, val_losses = {}, {}    -- val_losses[step] at the steps it was measured
local function save(step)
   local parts, vparts = {}, {}
   for i = 1, step do
      parts[i] = ('%.9g'):format(losses[i])     -- float32 round-trips in 9 digits
      if val_losses[i] then vparts[#vparts + 1] = ('%d:%.9g'):format(i, val_losses[i]) end
   end
   fnn.save_training(model, opt, step, cfg.state, {metadata = {losses = table.concat(parts, ','),
                                                                val_losses = table.concat(vparts, ',')}})
end

local function file_exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() end
   return f ~= nil
end

local step = 0                     -- steps completed
if cfg.resume and not file_exists(cfg.state) then
   io.stderr:write(('char_lm: --resume: no state file %s\n'):format(cfg.state))
   os.exit(1, true)
end
if file_exists(cfg.state) and not cfg.fresh then
   step = fnn.load_training(model, opt, cfg.state)
   local meta = fnn.serialize.info(cfg.state).metadata
   for v in (meta.losses or ''):gmatch('[^,]+') do losses[#losses + 1] = tonumber(v) end
   for i, v in (meta.val_losses or ''):gmatch('(%d+):([^,]+)') do val_losses[tonumber(i)] = tonumber(v) end
   print(('resumed at step %d from %s'):format(step, cfg.state))
end

-- ---------------------------------------------------------------------------
-- training. Ctrl-C raises the Lua error 'interrupted' wherever the program is; the pcall catches
-- it. Until opt:step() starts, the parameters and moments are those of the last completed step,
-- so they are saved as that step. An interrupt inside the update (half the parameters moved)
-- cannot be saved consistently; the last periodic save is then the one to resume from.

local phase = 'compute'
local last_saved = file_exists(cfg.state) and not cfg.fresh and step or nil

local function train()
   for s = step + 1, cfg.steps do
      phase = 'compute'
      local x, y = batch_at(s)
      opt:set_lr(lr_at(s))
      opt:zero_grad()
      local function forward_loss()
         return ce(model(x):reshape(cfg.batch * cfg.context, V), y:reshape(cfg.batch * cfg.context))
      end
      local loss = cfg.precision == 'autocast_bf16' and fnn.autocast('bf16', forward_loss) or forward_loss()
      loss:backward()
      optim.clip_grad_norm(model:parameters(), 1.0)
      local value = loss:item()
      phase = 'update'
      opt:step()
      losses[s] = value
      step = s
      phase = 'compute'
      if s % cfg.eval_every == 0 or s == cfg.steps then val_losses[s] = validation_loss() end
      if tb then
         tb:add_scalar('loss/train', value, s)
         tb:add_scalar('learning_rate', lr_at(s), s)
         if val_losses[s] then tb:add_scalar('loss/validation', val_losses[s], s) end
      end
      if s % cfg.log_every == 0 or val_losses[s] then
         print(('step %d/%d  loss %.4f%s  lr %.2e'):format(s, cfg.steps, value,
               val_losses[s] and ('  validation %.4f'):format(val_losses[s]) or '', lr_at(s)))
      end
      if s % cfg.save_every == 0 or s == cfg.steps then
         save(s)
         last_saved = s
      end
   end
end

local ok, err = pcall(train)
if not ok then
   if not tostring(err):find('interrupted', 1, true) then error(err, 0) end
   if phase == 'compute' then
      save(step)
      print(('interrupted at step %d, saved %s'):format(step, cfg.state))
   elseif last_saved then
      print(('interrupted inside the update of step %d, which cannot be saved half done; the last save stands: '
             .. 'interrupted at step %d, saved %s'):format(step + 1, last_saved, cfg.state))
   else
      print(('interrupted inside the update of step %d, before any save; nothing saved'):format(step + 1))
   end
   if tb then tb:close() end
   os.exit(130, true)   -- closing the state runs the finalizers: a leak checker then sees only real leaks
end

if step > 0 and not val_losses[step] then val_losses[step] = validation_loss() end   -- (cut short by Ctrl-C)
local final, final_val = losses[step], val_losses[step]
print(('final step %d  loss %s  validation %s  checksum %s'):format(step, final and ('%.6f'):format(final) or '-',
      final_val and ('%.6f'):format(final_val) or '-', checksum()))
if final_val then
   print(('validation loss %.4f vs unigram entropy %.4f nats/char: %s'):format(final_val, entropy,
         final_val < entropy and 'below (the model uses context)' or 'not below yet (train longer)'))
end

-- ---------------------------------------------------------------------------
-- the loss curve

local plot = fnn.plot
local xs, ys = {}, {}
local vx, vy = {}, {}
for s = 1, step do
   if losses[s] then xs[#xs + 1], ys[#ys + 1] = s, losses[s] end
   if val_losses[s] then vx[#vx + 1], vy[#vy + 1] = s, val_losses[s] end
end
if #xs > 0 then
   local path = plot.line{path = pictures.path(cfg, 'char_lm_loss.png'), title = 'char_lm: loss per character',
      xlabel = 'step', ylabel = 'nats / char', series = {
         {name = 'train', x = xs, y = ys},
         {name = 'validation', x = vx, y = vy},
         {name = 'unigram entropy', x = {1, step}, y = {entropy, entropy}}}}
   pictures.wrote(path)
end

-- ---------------------------------------------------------------------------
-- generation: each new character from the logits of the last position, over the last `context`
-- characters (the position embeddings know no more)

model:eval()
fnn.manual_seed(cfg.seed)
local sampler = nn.Sampler{temperature = cfg.temperature, top_k = cfg.top_k}
local prompt = cfg.prompt
if prompt == '' then
   prompt = text:match('^[^\n]*\n?')
end
local ids = ds:encode(prompt):to_table()
fnn.no_grad(function()
   for _ = 1, cfg.chars do
      local n = math.min(#ids, cfg.context)
      local window = {}
      for i = 1, n do window[i] = ids[#ids - n + i] end
      local logits = model(fnn.long(window):reshape(1, n))
      ids[#ids + 1] = sampler:sample(logits:narrow(2, n, 1))
   end
end)
print(('--- the prompt and %d generated characters (%s) ---'):format(cfg.chars, tostring(sampler)))
print(ds:decode(ids))
if tb then
   -- markdown: the sample as a code block, so its line breaks and indentation show
   tb:add_text('sample', '```\n' .. ds:decode(ids) .. '\n```', step)
   tb:close()
   print(('TensorBoard: tensorboard --logdir %s'):format(cfg.tensorboard))
end
