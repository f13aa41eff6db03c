"""diffusers on "tpu", unmodified: a UNet2D and a DiT (transformer) denoiser train a few steps and sample through
scheduler pipelines (DDPM, DDIM, DiT's), and the VAE (AutoencoderKL) round-trips, each against the same run on
CPU with zero CPU fallbacks. Tiny configs built locally (no hub).

Tolerances (relative: max|tpu - cpu| / max|cpu|, `validate_models.rel_error`):
- HIGHEST (bf16x6 MXU passes, about fp32): `EXACT` = 1e-4, fp32 rounding through a few conv/attention layers
  (measured 1e-7..1e-5); a sampling loop stays within it because every step's noise comes from the same CPU
  generator (diffusers' `randn_tensor` draws on the generator's device, then moves).
- DEFAULT (one bf16 pass: both matmul/conv operands rounded to 8 significant bits, 2^-9 relative each, fp32
  accumulation): `BF16` = 5e-2, the zoo's bound; a sampling loop feeds each step's bf16 error into the next, so
  the DEFAULT sampling bound is `BF16_LOOP` = 1e-1 over 4 steps (measured figures in docs/ecosystem.md).
"""

from __future__ import annotations

import copy
import os

import pytest
import torch

import torchtpu
from torchtpu.validate_models import GRAD_FLOOR, rel_error

os.environ.setdefault("HF_HUB_OFFLINE", "1")
diffusers = pytest.importorskip("diffusers", reason="the `ecosystem` extra is missing: pip install -e '.[ecosystem]'")

EXACT = 1e-4
BF16 = 5e-2
BF16_LOOP = 1e-1
STEPS = 3


def _no_fallbacks() -> None:
    assert not torchtpu.fallback_counts(), f"CPU fallbacks: {torchtpu.fallback_counts()}"


def _unet():
    torch.manual_seed(0)
    return diffusers.UNet2DModel(
        sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(16, 32),
        norm_num_groups=8, attention_head_dim=8, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"))


def _dit():
    # num_embeds_ada_norm=1000: DiTPipeline's classifier-free guidance uses class 1000 as the null label
    torch.manual_seed(0)
    model = diffusers.DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=8, num_layers=2, sample_size=4,
        patch_size=2, num_embeds_ada_norm=1000)
    # In train() mode its label embedder drops 10% of the class labels (classifier-free guidance training) with
    # torch.rand on the labels' device; the device RNG is not CPU's, so the comparison turns that off (as the
    # zoo zeroes dropout). Label dropping on "tpu" itself is checked in test_dit_label_dropout_on_tpu.
    for block in model.transformer_blocks:
        block.norm1.emb.class_embedder.dropout_prob = 0.0
    return model


def _vae():
    torch.manual_seed(0)
    return diffusers.AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 16), norm_num_groups=4,
        layers_per_block=1, sample_size=8, down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2)


def _train(model, device: str, conditioned: bool) -> tuple[list[float], dict[str, torch.Tensor]]:
    """`STEPS` epsilon-prediction steps (DDPM forward process, MSE on the noise; DiT predicts 2x channels:
    noise and the learned variance, the noise half is trained), AdamW. Noise and timesteps from a CPU
    generator, so both devices see the same batch. Returns every step's loss and the first step's gradients
    (parameters after AdamW are not compared: Adam divides by the gradient's magnitude, so a gradient that is
    rounding noise on both sides moves its parameter by +-lr either way)."""
    sched = diffusers.DDPMScheduler(num_train_timesteps=100)
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    channels = model.config.in_channels
    size = model.config.sample_size
    losses, grads = [], {}
    for _ in range(STEPS):
        clean = torch.randn(2, channels, size, size, generator=g)
        noise = torch.randn(clean.shape, generator=g)
        t = torch.randint(0, 100, (2,), generator=g)
        noisy = sched.add_noise(clean, noise, t)
        kwargs = {"class_labels": torch.tensor([1, 7]).to(device)} if conditioned else {}
        out = model(noisy.to(device), t.to(device), **kwargs).sample
        loss = torch.nn.functional.mse_loss(out[:, :channels], noise.to(device))
        loss.backward()
        grads = grads or {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, grads


def _compare_training(build, conditioned: bool) -> None:
    model = build()
    ref_losses, ref_grads = _train(copy.deepcopy(model), "cpu", conditioned)
    with torchtpu.precision("HIGHEST"):
        losses, grads = _train(model, "tpu", conditioned)
    for a, b in zip(ref_losses, losses):
        assert abs(a - b) <= EXACT * abs(a), (ref_losses, losses)
    assert set(grads) == set(ref_grads)
    # each gradient's scale floored at GRAD_FLOOR of the largest, as in the zoo's train check
    floor = GRAD_FLOOR * max(g.abs().max().item() for g in ref_grads.values())
    worst = max((rel_error(ref_grads[n], grads[n], floor), n) for n in ref_grads)
    assert worst[0] <= EXACT, worst
    _no_fallbacks()


def test_unet2d_trains_like_cpu(tpu):
    _compare_training(_unet, conditioned=False)


def test_dit_trains_like_cpu(tpu):
    _compare_training(_dit, conditioned=True)


def test_dit_label_dropout_on_tpu(tpu):
    """With the default 10% label dropout, training-mode label embeddings draw their mask from the device RNG:
    over 256 labels about 10% become the null class (1000), zero fallbacks."""
    embedder = diffusers.DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, num_layers=1, sample_size=4,
        patch_size=2, num_embeds_ada_norm=1000).transformer_blocks[0].norm1.emb.class_embedder.to("tpu").train()
    labels = torch.arange(256, device="tpu") % 1000
    dropped = (embedder.token_drop(labels) == 1000).sum().item()
    assert 8 <= dropped <= 50, dropped         # Binomial(256, 0.1): mean 25.6, sd 4.8
    _no_fallbacks()


def _sample(pipe_cls, unet, scheduler, device: str, precision: str = "HIGHEST", **kwargs):
    pipe = pipe_cls(unet=unet, scheduler=scheduler).to(device)
    with torchtpu.precision(precision):
        out = pipe(batch_size=2, generator=torch.Generator().manual_seed(0), num_inference_steps=4,
                   output_type="np", return_dict=False, **kwargs)[0]
    return torch.from_numpy(out), pipe


@pytest.mark.parametrize("kind", ["ddpm", "ddim"])
def test_pipeline_samples_like_cpu(tpu, kind):
    """DDPMPipeline (fresh noise every step, from the CPU generator) and DDIMPipeline (eta=0) on "tpu": the pipeline
    runs where its modules are, images equal CPU's at HIGHEST, within the bf16 loop bound at DEFAULT."""
    pipe_cls, sched_cls = {"ddpm": (diffusers.DDPMPipeline, diffusers.DDPMScheduler),
                           "ddim": (diffusers.DDIMPipeline, diffusers.DDIMScheduler)}[kind]
    unet = _unet().eval()
    ref, _ = _sample(pipe_cls, copy.deepcopy(unet), sched_cls(num_train_timesteps=100), "cpu")
    got, pipe = _sample(pipe_cls, unet, sched_cls(num_train_timesteps=100), "tpu")
    assert pipe.device.type == "tpu"
    assert got.shape == ref.shape == (2, 8, 8, 3)
    assert rel_error(ref, got) <= EXACT
    bf16, _ = _sample(pipe_cls, unet, sched_cls(num_train_timesteps=100), "tpu", precision="DEFAULT")
    assert rel_error(ref, bf16) <= BF16_LOOP
    _no_fallbacks()


def _dit_pipeline(device: str):
    pipe = diffusers.DiTPipeline(transformer=_dit().eval(), vae=_vae().eval(),
                                 scheduler=diffusers.DDIMScheduler(num_train_timesteps=100)).to(device)
    return pipe(class_labels=[1, 7], guidance_scale=3.0, generator=torch.Generator().manual_seed(0),
                num_inference_steps=4, output_type="np", return_dict=False)[0]


def test_dit_pipeline_samples_like_cpu(tpu):
    """DiTPipeline: classifier-free guidance (class 1000 as the null label), DDIM steps, the VAE decode."""
    ref = torch.from_numpy(_dit_pipeline("cpu"))
    with torchtpu.precision("HIGHEST"):
        got = torch.from_numpy(_dit_pipeline("tpu"))
    assert got.shape == ref.shape == (2, 8, 8, 3)
    assert rel_error(ref, got) <= EXACT
    _no_fallbacks()


@pytest.mark.parametrize(("precision", "bound"), [("HIGHEST", EXACT), ("DEFAULT", BF16)])
def test_vae_round_trip(tpu, precision, bound):
    """AutoencoderKL encode (posterior mean and a sample drawn with a CPU generator) and decode vs CPU."""
    vae = _vae().eval()
    image = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(3))

    def round_trip(model, device):
        with torch.no_grad():
            post = model.encode(image.to(device)).latent_dist
            z = post.sample(generator=torch.Generator().manual_seed(4))
            return post.mean.cpu(), z.cpu(), model.decode(z).sample.cpu()

    ref = round_trip(copy.deepcopy(vae), "cpu")
    with torchtpu.precision(precision):
        got = round_trip(vae.to("tpu"), "tpu")
    assert got[2].shape == image.shape
    for name, a, b in zip(("mean", "sample", "decoded"), ref, got):
        assert rel_error(a, b) <= bound, (name, rel_error(a, b))
    _no_fallbacks()


def test_diffusers_picks_the_tpu_accelerator(tpu):
    """diffusers asks `torch.accelerator` for the host's device (offloading, device maps): it finds "tpu"."""
    from diffusers.utils.torch_utils import TorchDeviceBackend, get_device

    assert get_device() == "tpu"
    backend = TorchDeviceBackend()
    assert backend.device.type == "tpu" and backend.module is torch.tpu
    backend.synchronize()
