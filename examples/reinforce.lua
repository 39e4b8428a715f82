-- reinforce: policy gradient (REINFORCE, Williams 1992) on a 10-armed bandit. Each arm pays 1
-- with its own hidden probability, else 0. The policy is a softmax over 10 learned logits; each
-- step pulls --batch arms drawn from it (nn.Sampler), and raises the log-probability of each pull
-- in proportion to its reward minus a baseline (the running mean reward), which lowers the
-- variance of the gradient without biasing it. The policy should end up on the best arm.
--   fastnn-lua examples/reinforce.lua             full run (1000 steps, a few seconds)
--   fastnn-lua examples/reinforce.lua --quick     200 steps (a second, for CI)
-- Prints the mean reward and the best arm's probability every --log-every steps, then the arm the
-- policy picks and its probability; exits 1 when that is not the best arm.
-- Writes: OUT/reinforce_policy.png (each arm's probability per step) and OUT/reinforce_reward.png.
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local cli, pictures = require 'common.cli', require 'common.pictures'

local opts = cli.parse{
   name = 'reinforce', about = 'REINFORCE with a baseline learns which arm of a 10-armed bandit pays best.',
   options = {
      {'steps', 1000, 'policy updates'},
      {'batch', 32, 'arm pulls per update'},
      {'lr', 0.05, 'Adam learning rate'},
      {'log_every', 100, 'print progress every N steps'},
   },
   quick = {steps = 200, log_every = 50},
}
fnn.manual_seed(opts.seed)

-- the arms' chances of paying 1; the best is arm 7, a close second arm 3
local PAYOUT = {0.30, 0.45, 0.70, 0.20, 0.50, 0.10, 0.80, 0.35, 0.60, 0.25}
local K = #PAYOUT
local best = 1
for a = 2, K do if PAYOUT[a] > PAYOUT[best] then best = a end end

local logits = fnn.Param(fnn.zeros(K))          -- the policy: softmax(logits), uniform at first
local opt = optim.Adam({logits}, opts.lr)
local sampler = nn.Sampler()                     -- one draw from softmax(logits) per call

local baseline, B = 0, opts.batch
local probs_per_step, rewards = {}, {}
for a = 1, K do probs_per_step[a] = {} end
for step = 1, opts.steps do
   local l = logits:tensor()
   local arms, reward = {}, {}
   local u = fnn.rand(B):to_table()
   for i = 1, B do
      arms[i] = sampler:sample(l:detach())
      reward[i] = u[i] < PAYOUT[arms[i]] and 1 or 0
   end
   local r = fnn.tensor(reward)
   local mean_r = r:mean():item()
   -- REINFORCE: maximise E[(r - b) log pi(a)], i.e. minimise its negative
   local logp = l:log_softmax(1):index_select(1, fnn.long(arms))
   local loss = -((r - baseline) * logp):mean()
   opt:zero_grad()
   loss:backward()
   opt:step()
   baseline = 0.9 * baseline + 0.1 * mean_r

   local p = fnn.no_grad(function() return logits:tensor():softmax(1) end):to_table()
   for a = 1, K do probs_per_step[a][step] = p[a] end
   rewards[step] = mean_r
   if step % opts.log_every == 0 or step == opts.steps then
      print(('step %d/%d  mean reward %.3f  p(best arm %d) %.3f'):format(step, opts.steps, mean_r, best, p[best]))
   end
end

local p = fnn.no_grad(function() return logits:tensor():softmax(1) end):to_table()
local picked = 1
for a = 2, K do if p[a] > p[picked] then picked = a end end
print(('picked arm %d with probability %.3f (it pays %.2f); the best arm is %d (pays %.2f)'):format(picked, p[picked],
      PAYOUT[picked], best, PAYOUT[best]))

local series = {}
for a = 1, K do series[a] = {name = ('arm %d (%.2f)'):format(a, PAYOUT[a]), y = probs_per_step[a]} end
pictures.wrote(fnn.plot.line{path = pictures.path(opts, 'reinforce_policy.png'), title = 'policy: p(arm) per step',
   xlabel = 'step', ylabel = 'probability', legend = 'lower right', series = series})
pictures.wrote(fnn.plot.line{path = pictures.path(opts, 'reinforce_reward.png'), title = 'mean reward per step',
   xlabel = 'step', ylabel = 'reward', series = {{name = 'mean reward', y = rewards},
      {name = ('best arm pays %.2f'):format(PAYOUT[best]), x = {1, opts.steps}, y = {PAYOUT[best], PAYOUT[best]}}}})

if picked ~= best then
   io.stderr:write(('reinforce: the policy picked arm %d, not the best arm %d\n'):format(picked, best))
   os.exit(1)
end
