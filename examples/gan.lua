-- gan: a generative adversarial network on 2-D points. The data is a ring of 8 Gaussians; a
-- generator MLP turns noise into points and a discriminator MLP tells them from real ones, each
-- trained with Adam on the other's current state (the non-saturating loss of Goodfellow et al.).
--   fastnn-lua examples/gan.lua             full run (3000 steps, about ten seconds)
--   fastnn-lua examples/gan.lua --quick     600 steps (seconds, for CI)
-- Prints both losses every --log-every steps, then how many of the 8 modes the generator covers
-- (a mode is covered when at least 1% of 2000 generated points lie within 0.2 of its centre) and
-- the share of generated points that lie near any mode.
-- Writes: OUT/gan_samples.png (real and generated points) and OUT/gan_loss.png (both losses).
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local cli, pictures = require 'common.cli', require 'common.pictures'

local opts = cli.parse{
   name = 'gan', about = 'A GAN learns a ring of 8 Gaussians in the plane.',
   options = {
      {'steps', 3000, 'training steps (one discriminator and one generator update each)'},
      {'batch', 256, 'points per step'},
      {'lr', 1e-3, 'Adam learning rate of both networks'},
      {'hidden', 128, 'units per hidden layer'},
      {'log_every', 250, 'print the losses every N steps'},
   },
   quick = {steps = 600, log_every = 150},
}
fnn.manual_seed(opts.seed)

local MODES, RADIUS, STD, NOISE = 8, 2, 0.05, 8
local centres = {}
for k = 1, MODES do
   local a = 2 * math.pi * (k - 1) / MODES
   centres[k] = {RADIUS * math.cos(a), RADIUS * math.sin(a)}
end

-- n real points: the modes in turn, each with Gaussian noise of STD
local function real(n)
   local rows = {}
   for i = 1, n do rows[i] = centres[(i - 1) % MODES + 1] end
   return fnn.tensor(rows) + fnn.randn(n, 2) * STD
end

local H = opts.hidden
local G = nn.Sequential(nn.Linear(NOISE, H), nn.ReLU(), nn.Linear(H, H), nn.ReLU(), nn.Linear(H, 2))
local D = nn.Sequential(nn.Linear(2, H), nn.LeakyReLU(0.2), nn.Linear(H, H), nn.LeakyReLU(0.2), nn.Linear(H, 1))
local opt_g = optim.Adam(G:parameters(), opts.lr, {betas = {0.5, 0.999}})
local opt_d = optim.Adam(D:parameters(), opts.lr, {betas = {0.5, 0.999}})
local bce = nn.bce_with_logits

local B = opts.batch
local ones, zeros = fnn.ones(B, 1), fnn.zeros(B, 1)
local d_losses, g_losses = {}, {}
for step = 1, opts.steps do
   -- the discriminator: real points are 1, generated ones 0 (detached: G is not trained here)
   local fake = G(fnn.randn(B, NOISE)):detach()
   local d_loss = bce(D(real(B)), ones) + bce(D(fake), zeros)
   opt_d:zero_grad()
   d_loss:backward()
   opt_d:step()

   -- the generator: make D call its points real
   local g_loss = bce(D(G(fnn.randn(B, NOISE))), ones)
   opt_g:zero_grad()
   g_loss:backward()
   opt_g:step()

   d_losses[step], g_losses[step] = d_loss:item(), g_loss:item()
   if step % opts.log_every == 0 or step == opts.steps then
      print(('step %d/%d  discriminator loss %.4f  generator loss %.4f'):format(step, opts.steps, d_losses[step],
            g_losses[step]))
   end
end

-- how well the generated points cover the ring
G:eval()
local N = 2000
local gen = fnn.no_grad(function() return G(fnn.randn(N, NOISE)) end):to_table()
local hits, near = {}, 0
for _, p in ipairs(gen) do
   for k, c in ipairs(centres) do
      if (p[1] - c[1]) ^ 2 + (p[2] - c[2]) ^ 2 < 0.2 ^ 2 then
         hits[k] = (hits[k] or 0) + 1
         near = near + 1
         break
      end
   end
end
local covered = 0
for k = 1, MODES do
   if (hits[k] or 0) >= 0.01 * N then covered = covered + 1 end
end
print(('modes covered %d/%d, generated points near a mode %.1f%%'):format(covered, MODES, 100 * near / N))

local rx, ry, gx, gy = {}, {}, {}, {}
for i, p in ipairs(real(N):to_table()) do rx[i], ry[i] = p[1], p[2] end
for i, p in ipairs(gen) do gx[i], gy[i] = p[1], p[2] end
local plot = fnn.plot
pictures.wrote(plot.scatter{path = pictures.path(opts, 'gan_samples.png'),
   title = ('GAN after %d steps: %d/%d modes'):format(opts.steps, covered, MODES), xlabel = 'x', ylabel = 'y',
   width = 520, height = 520,
   series = {{name = 'real', x = rx, y = ry}, {name = 'generated', x = gx, y = gy}}})
pictures.wrote(plot.line{path = pictures.path(opts, 'gan_loss.png'), title = 'GAN losses', xlabel = 'step',
   ylabel = 'binary cross-entropy',
   series = {{name = 'discriminator', y = d_losses}, {name = 'generator', y = g_losses}}})
