-- vae: a variational autoencoder (Kingma & Welling) on 2-D points, the two interleaved half
-- circles of "two moons". The encoder gives a Gaussian q(z|x) over a 2-D latent (mean and log
-- variance); z is drawn by the reparameterisation z = mu + sigma * eps, so the gradient flows
-- through the draw; the decoder maps z back to a point. The loss is the negative ELBO: the
-- reconstruction error under a Gaussian decoder of fixed std --sigma, plus KL(q(z|x) || N(0, I)).
--   fastnn-lua examples/vae.lua             full run (4000 steps, about ten seconds)
--   fastnn-lua examples/vae.lua --quick     800 steps (a few seconds, for CI)
-- Prints the loss and its two terms every --log-every steps, then how close points generated from
-- the prior (z ~ N(0, I), decoded) come to the data: the mean distance to the nearest data point.
-- Writes: OUT/vae_samples.png (data, reconstructions and points generated from the prior),
-- OUT/vae_latent.png (the encoder's means of the data, one colour per moon: near N(0, I) when
-- the KL term did its work) and OUT/vae_loss.png.
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local cli, pictures = require 'common.cli', require 'common.pictures'

local opts = cli.parse{
   name = 'vae', about = 'A variational autoencoder on 2-D points (two moons).',
   options = {
      {'steps', 4000, 'training steps'},
      {'batch', 256, 'points per step'},
      {'lr', 2e-3, 'Adam learning rate'},
      {'hidden', 64, 'units per hidden layer'},
      {'sigma', 0.1, 'std of the Gaussian decoder (weighs reconstruction against KL)'},
      {'log_every', 500, 'print the loss every N steps'},
   },
   quick = {steps = 800, log_every = 200},
}
fnn.manual_seed(opts.seed)

local NOISE = 0.05
-- n points of two moons (n even): the first n/2 on the upper half circle, the rest on the lower
-- one, shifted right
local function moons(n)
   local h = n / 2
   local t = fnn.rand(h, 1) * math.pi
   local upper = fnn.cat({t:cos(), t:sin()}, 2)
   local lower = fnn.cat({1 - t:cos(), 0.5 - t:sin()}, 2)
   return fnn.cat({upper, lower}, 1) + fnn.randn(n, 2) * NOISE
end

local Z, H = 2, opts.hidden
local VAE = nn.Module:extend('VAE')
function VAE:__init()
   self.encoder = nn.Sequential(nn.Linear(2, H), nn.ReLU(), nn.Linear(H, H), nn.ReLU(), nn.Linear(H, 2 * Z))
   self.decoder = nn.Sequential(nn.Linear(Z, H), nn.ReLU(), nn.Linear(H, H), nn.ReLU(), nn.Linear(H, 2))
end
-- x [N, 2] -> mu, logvar [N, Z]
function VAE:encode(x)
   local h = self.encoder(x)
   return h:narrow(2, 1, Z), h:narrow(2, Z + 1, Z)
end
-- x -> the reconstruction, mu, logvar
function VAE:forward(x)
   local mu, logvar = self:encode(x)
   local z = mu + (logvar * 0.5):exp() * fnn.randn_like(mu)      -- the reparameterisation
   return self.decoder(z), mu, logvar
end

local model = VAE()
local opt = optim.Adam(model:parameters(), opts.lr)
local inv_two_var = 1 / (2 * opts.sigma ^ 2)

-- per point, averaged over the batch: reconstruction -log p(x|z) (up to a constant) and the KL
local function losses(x)
   local recon, mu, logvar = model(x)
   local rec = ((x - recon) ^ 2):sum(2):mean() * inv_two_var
   local kl = ((mu ^ 2 + logvar:exp() - logvar - 1):sum(2) * 0.5):mean()
   return rec, kl
end

local history = {}
for step = 1, opts.steps do
   local rec, kl = losses(moons(opts.batch))
   local loss = rec + kl
   opt:zero_grad()
   loss:backward()
   opt:step()
   history[step] = loss:item()
   if step % opts.log_every == 0 or step == opts.steps then
      print(('step %d/%d  loss %.4f  (reconstruction %.4f, KL %.4f nats)'):format(step, opts.steps, history[step],
            rec:item(), kl:item()))
   end
end

-- samples: decoded draws from the prior, scored by their distance to the nearest data point
model:eval()
local N = 1000
local data_pts = moons(N)
local gen, recon, mu = fnn.no_grad(function()
   local r, m = model(data_pts)
   return model.decoder(fnn.randn(N, Z)), r, m
end)
local d, g = data_pts:to_table(), gen:to_table()
local total = 0
for _, p in ipairs(g) do
   local best = math.huge
   for _, q in ipairs(d) do
      local e = (p[1] - q[1]) ^ 2 + (p[2] - q[2]) ^ 2
      if e < best then best = e end
   end
   total = total + math.sqrt(best)
end
print(('generated points: mean distance to the nearest data point %.4f (the data\'s own noise std is %.2f)'):format(
   total / N, NOISE))

local function xy(rows, from, to)
   local x, y = {}, {}
   for i = from or 1, to or #rows do x[#x + 1], y[#y + 1] = rows[i][1], rows[i][2] end
   return x, y
end
local plot = fnn.plot
local dx, dy = xy(d)
local rx, ry = xy(recon:to_table())
local gx, gy = xy(g)
pictures.wrote(plot.scatter{path = pictures.path(opts, 'vae_samples.png'),
   title = ('VAE after %d steps'):format(opts.steps), xlabel = 'x', ylabel = 'y',
   series = {{name = 'data', x = dx, y = dy}, {name = 'reconstructed', x = rx, y = ry},
             {name = 'generated from N(0, I)', x = gx, y = gy}}})
local m = mu:to_table()
local ux, uy = xy(m, 1, N / 2)
local lx, ly = xy(m, N / 2 + 1, N)
pictures.wrote(plot.scatter{path = pictures.path(opts, 'vae_latent.png'), title = 'VAE latent means of the data',
   xlabel = 'z1', ylabel = 'z2', width = 520, height = 520,
   series = {{name = 'upper moon', x = ux, y = uy}, {name = 'lower moon', x = lx, y = ly}}})
pictures.wrote(plot.line{path = pictures.path(opts, 'vae_loss.png'), title = 'VAE loss (negative ELBO)',
   xlabel = 'step', ylabel = 'nats per point', series = {{name = 'train', y = history}}})
