"""Vector signatures (random hyperplanes): golden vectors, hyperplanes independent of numpy's
generator, Hamming distance tracking the angle, batches equal to one-by-one, bad input refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simsql
import simsql.bits
from simsql.text.vectors import VectorFingerprinter, cosine_estimate, hyperplanes

VECTORS = {
    "ints8": [(i * 7 % 11) - 5 for i in range(8)],
    "sines384": [math.sin(i + 1) for i in range(384)],
    "ramp256": [i / 256 - 0.5 for i in range(256)],
    "onehot3": [0.0, 0.0, 1.0],
}

# Written once from simsql 0.3's VectorFingerprinter and frozen: a stored signature is a
# compatibility promise. If one of these changes, the change breaks every stored vector signature.
GOLDEN = {
    ("ints8", 0): 16917382917571600868,
    ("ints8", 42): 3687181261032454231,
    ("sines384", 0): 299630668777129334,
    ("sines384", 42): 1473108808702394574,
    ("ramp256", 0): 13746097567922039311,
    ("ramp256", 42): 7177933801894288462,
    ("onehot3", 0): 6605299750517086078,
    ("onehot3", 42): 6780452933893647734,
}
GOLDEN_CONFIG_IDS = {
    (8, 0): "vh1-4eb6e6b29561",
    (384, 0): "vh1-a47bb3b87803",
    (256, 0): "vh1-786b11fb6686",
    (3, 0): "vh1-a0806950d1c5",
    (384, 42): "vh1-8fc392975543",
}
# hyperplane j, coordinate i of seed 0 (exact multiples of 2**-24)
GOLDEN_COORDINATES = {
    (0, 0): -0.35617297887802124,
    (1, 0): 1.9793368577957153,
    (0, 1): 0.33431780338287354,
    (63, 383): -0.4680439233779907,
}


@pytest.mark.parametrize(("name", "seed"), sorted(GOLDEN))
def test_golden_vectors(name: str, seed: int) -> None:
    vector = VECTORS[name]
    fingerprinter = VectorFingerprinter(len(vector), seed=seed)
    assert fingerprinter.fingerprint(vector) == GOLDEN[(name, seed)]
    assert fingerprinter.fingerprint(np.asarray(vector, dtype=np.float64)) == GOLDEN[(name, seed)]


@pytest.mark.parametrize(("dimensions", "seed"), sorted(GOLDEN_CONFIG_IDS))
def test_golden_config_ids(dimensions: int, seed: int) -> None:
    assert VectorFingerprinter(dimensions, seed=seed).config_id == GOLDEN_CONFIG_IDS[(dimensions, seed)]


def test_golden_hyperplane_coordinates_are_exact_quantized_normals() -> None:
    planes = hyperplanes(384, 0)
    for (plane, coordinate), value in GOLDEN_COORDINATES.items():
        assert planes[coordinate, plane] == value
    assert np.all(planes * 2.0**24 == np.round(planes * 2.0**24))
    # Gaussian, as Box-Muller promises: mean ~0, variance ~1 over 24576 draws
    assert abs(planes.mean()) < 0.03
    assert abs(planes.var() - 1.0) < 0.05
    # a longer vector's first coordinates are a shorter one's
    assert np.array_equal(hyperplanes(8, 0), planes[:8])


def test_config_ids_differ_by_every_setting_and_from_text_configs() -> None:
    ids = {VectorFingerprinter(d, seed=s).config_id for d in (3, 4) for s in (0, 1)}
    assert len(ids) == 4
    assert all(i.startswith("vh1-") for i in ids)
    assert not simsql.Fingerprinter().config_id.startswith("vh")
    same = VectorFingerprinter(4, seed=1)
    assert same == VectorFingerprinter(4, seed=1) and hash(same) == hash(VectorFingerprinter(4, seed=1))
    assert VectorFingerprinter.from_settings(dict(same.settings)) == same


def test_bits_are_the_signs_of_the_projections() -> None:
    rng = np.random.default_rng(3)
    fingerprinter = VectorFingerprinter(16, seed=9)
    vector = rng.normal(size=16)
    expected = sum(1 << j for j in range(64) if float(vector @ fingerprinter.planes[:, j]) > 0)
    assert fingerprinter.fingerprint(vector) == expected
    assert 0 <= expected < 2**64


def test_batch_equals_one_by_one_and_float32_equals_float64() -> None:
    rng = np.random.default_rng(4)
    batch = rng.normal(size=(50, 32)).astype(np.float32)
    fingerprinter = VectorFingerprinter(32)
    one_by_one = [fingerprinter.fingerprint(row) for row in batch]
    assert fingerprinter.fingerprint_many(batch) == one_by_one
    assert fingerprinter.fingerprint_many(batch.astype(np.float64)) == one_by_one
    assert fingerprinter.fingerprint_many([list(map(float, row)) for row in batch]) == one_by_one
    assert fingerprinter.fingerprint_many(batch * 4.0) == one_by_one  # direction only
    assert fingerprinter.fingerprint_many([]) == []
    assert fingerprinter.fingerprint_many(np.empty((0, 32))) == []


def _pairs_at_angle(rng: np.random.Generator, angle: float, n: int, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random pairs of unit vectors exactly ``angle`` apart."""
    u = rng.normal(size=(n, dimensions))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    w = rng.normal(size=(n, dimensions))
    w -= (w * u).sum(axis=1, keepdims=True) * u
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    return u, math.cos(angle) * u + math.sin(angle) * w


def test_hamming_distance_tracks_the_angle() -> None:
    """E[distance] = 64 * angle / pi (Charikar): the mean over 400 pairs is within 1.5 bits
    (about 5 standard errors), means grow with the angle, and the cosine estimate follows."""
    rng = np.random.default_rng(5)
    fingerprinter = VectorFingerprinter(128, seed=11)
    means = []
    for degrees in (5, 20, 45, 90, 135, 175):
        angle = math.radians(degrees)
        a, b = _pairs_at_angle(rng, angle, 400, 128)
        fa, fb = fingerprinter.fingerprint_many(a), fingerprinter.fingerprint_many(b)
        distances = [simsql.bits.hamming(x, y) for x, y in zip(fa, fb)]
        mean = float(np.mean(distances))
        assert abs(mean - 64 * angle / math.pi) < 1.5, (degrees, mean)
        assert abs(fingerprinter.cosine_estimate(round(mean)) - math.cos(angle)) < 0.1
        means.append(mean)
    assert means == sorted(means)


def test_cosine_estimate() -> None:
    assert cosine_estimate(0) == 1.0
    assert cosine_estimate(32) == pytest.approx(0.0, abs=1e-12)
    assert cosine_estimate(64) == -1.0
    assert cosine_estimate(16, bits=128) == pytest.approx(math.cos(math.pi / 8))
    for bad, error in ((-1, ValueError), (65, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error):
            cosine_estimate(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ([1.0, 2.0], ValueError, "expected vectors of 3 numbers, got 2"),
        ([], ValueError, "expected vectors of 3 numbers, got 0"),
        ([1.0, float("nan"), 0.0], ValueError, "NaN or infinity"),
        ([1.0, float("inf"), 0.0], ValueError, "NaN or infinity"),
        ([0.0, 0.0, 0.0], ValueError, "all zeros"),
        ([[1.0, 2.0, 3.0]], ValueError, "fingerprint\\(\\) takes one vector"),
        ("1,2,3", TypeError, "got str"),
        (b"abc", TypeError, "got bytes"),
        (["1", "2", "3"], TypeError, "real numbers"),
        ([1.0, None, 2.0], TypeError, "real numbers"),
        ([True, False, True], TypeError, "real numbers"),
        (np.array([1 + 1j, 0, 1]), TypeError, "real numbers"),
        (np.array(["a", "b", "c"]), TypeError, "real numbers"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        VectorFingerprinter(3).fingerprint(value)  # type: ignore[arg-type]


def test_a_bad_vector_refuses_the_whole_batch() -> None:
    fingerprinter = VectorFingerprinter(3)
    with pytest.raises(ValueError, match="vector 1 is all zeros"):
        fingerprinter.fingerprint_many([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="rectangular|expected"):
        fingerprinter.fingerprint_many([[1.0, 2.0, 3.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="2-D batch"):
        fingerprinter.fingerprint_many(np.ones((2, 2, 3)))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"dimensions": 0}, ValueError),
        ({"dimensions": 3.0}, TypeError),
        ({"dimensions": 3, "seed": -1}, ValueError),
        ({"dimensions": 3, "bits": 128}, ValueError),
        ({"dimensions": True}, TypeError),
    ],
)
def test_bad_configuration(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        VectorFingerprinter(**kwargs)  # type: ignore[arg-type]


# -- centring ---------------------------------------------------------------------------------

CENTRE256 = [((i * 37) % 101 - 50) / 1024 for i in range(256)]  # exact multiples of 2**-24, length 0.456
CENTRE8 = [0.25, -0.125, 0.0, 0.5, 0.0, 0.0, -0.25, 0.125]

# Frozen like GOLDEN: signatures and configuration names of centred configurations.
GOLDEN_CENTRED = {
    ("ramp256", 0): 13745393880480260623,
    ("ramp256", 42): 4887852841620577354,
    ("sines256", 0): 10117627674567770999,
    ("sines256", 42): 1174182351177355354,
    ("ints8", 0): 199424061665567205,
}
GOLDEN_CENTRED_CONFIG_IDS = {(256, 0): "vh1-a9bc2c1f51ea", (256, 42): "vh1-0e1d8dd115b8", (8, 0): "vh1-f2cb594e86aa"}


def _centred_case(name: str) -> tuple[list[float], list[float]]:
    vector = {"ramp256": VECTORS["ramp256"], "sines256": [math.sin(i + 1) for i in range(256)], "ints8": VECTORS["ints8"]}[name]
    return vector, CENTRE8 if len(vector) == 8 else CENTRE256


@pytest.mark.parametrize(("name", "seed"), sorted(GOLDEN_CENTRED))
def test_golden_centred_vectors(name: str, seed: int) -> None:
    vector, centre = _centred_case(name)
    fingerprinter = VectorFingerprinter(len(vector), seed=seed, center=centre)
    assert fingerprinter.config_id == GOLDEN_CENTRED_CONFIG_IDS[(len(vector), seed)]
    assert fingerprinter.fingerprint(vector) == GOLDEN_CENTRED[(name, seed)]
    assert fingerprinter.fingerprint(np.asarray(vector) * 3.0) == GOLDEN_CENTRED[(name, seed)]  # direction only


def test_the_centre_is_subtracted_from_the_unit_vector() -> None:
    rng = np.random.default_rng(8)
    centre = np.asarray(CENTRE8)
    fingerprinter = VectorFingerprinter(8, seed=3, center=centre)
    for vector in rng.normal(size=(20, 8)):
        moved = vector / np.linalg.norm(vector) - centre
        expected = sum(1 << j for j in range(64) if float(moved @ fingerprinter.planes[:, j]) > 0)
        assert fingerprinter.fingerprint(vector) == expected


def test_the_centre_is_part_of_the_configuration() -> None:
    plain, centred = VectorFingerprinter(8), VectorFingerprinter(8, center=CENTRE8)
    assert plain.config_id == GOLDEN_CONFIG_IDS[(8, 0)]  # no centre: the configuration of before
    assert "center" not in plain.settings and centred.settings["center"] == CENTRE8
    assert centred.config_id != plain.config_id
    assert VectorFingerprinter(8, center=[x + 2**-30 for x in CENTRE8]).config_id == centred.config_id  # rounded to 2**-24
    assert VectorFingerprinter(8, center=[x + 2**-20 for x in CENTRE8]).config_id != centred.config_id
    assert VectorFingerprinter(8, center=[0.0] * 8) == plain  # a centre of zeros is none
    assert VectorFingerprinter.from_settings(dict(centred.settings)) == centred
    assert VectorFingerprinter(8, center=np.asarray(CENTRE8, dtype=np.float32)) == centred
    assert hash(centred) == hash(VectorFingerprinter(8, center=tuple(CENTRE8)))


def test_fit_centres_on_the_mean_unit_vector_and_balances_the_bits() -> None:
    """Vectors leaning one way (an offset shared by all) set most bits on nearly every row
    without a centre; fitted, each bit is set on about half of the rows."""
    rng = np.random.default_rng(9)
    sample = rng.normal(size=(4000, 32)) + 1.5
    fitted = VectorFingerprinter.fit(sample, seed=5)
    unit = sample / np.linalg.norm(sample, axis=1, keepdims=True)
    assert np.allclose(fitted.center, unit.mean(axis=0), atol=2**-24)
    assert fitted.seed == 5 and fitted.dimensions == 32
    assert VectorFingerprinter.fit(sample * 7.0, seed=5) == fitted  # scale-free

    def imbalance(fingerprinter: VectorFingerprinter) -> float:
        signatures = np.array(fingerprinter.fingerprint_many(sample), dtype=np.uint64)
        bits = (signatures[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
        return float(np.abs(bits.mean(axis=0) - 0.5).mean())

    assert imbalance(VectorFingerprinter(32, seed=5)) > 0.25
    assert imbalance(fitted) < 0.03


@pytest.mark.parametrize(
    ("center", "error", "message"),
    [
        ([0.1] * 7, ValueError, "one vector of 8 numbers"),
        ([[0.1] * 8], ValueError, "one vector of 8 numbers"),
        ([0.1] * 7 + [float("nan")], ValueError, "NaN or infinity"),
        ([0.5] * 8, ValueError, "length below 1"),
        (["0.1"] * 8, TypeError, "real numbers"),
        ("0.1", TypeError, "got str"),
    ],
)
def test_a_bad_centre_is_refused(center: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        VectorFingerprinter(8, center=center)  # type: ignore[arg-type]


def test_fit_refuses_an_empty_or_bad_sample() -> None:
    for sample, message in (([], "non-empty 2-D"), ([1.0, 2.0], "non-empty 2-D"), ([[1.0, 0.0], [0.0, 0.0]], "all zeros")):
        with pytest.raises(ValueError, match=message):
            VectorFingerprinter.fit(sample)


# -- the wide signature of a vector -----------------------------------------------------------

GOLDEN_WIDE = {
    (0, False): (13746097567922039311, 931849331403926250, 9780104628210744976, 13848652091016739840),
    (42, True): (4887852841620577354, 10198869927838855860, 1756585326494984814, 9468602307911396923),
}


@pytest.mark.parametrize(("seed", "centred"), sorted(GOLDEN_WIDE))
def test_golden_wide_signatures_extend_the_64_bit_one(seed: int, centred: bool) -> None:
    fingerprinter = VectorFingerprinter(256, seed=seed, center=CENTRE256 if centred else None)
    ramp = VECTORS["ramp256"]
    (signature,) = fingerprinter.signatures_many([ramp])
    assert signature.words == GOLDEN_WIDE[(seed, centred)]
    assert signature.words[0] == fingerprinter.fingerprint(ramp)
    planes = hyperplanes(256, seed, 256)
    moved = np.asarray(ramp) / np.linalg.norm(ramp) - (np.asarray(CENTRE256) if centred else 0.0)
    cosines = moved @ planes / np.linalg.norm(moved) / np.linalg.norm(planes, axis=0)
    assert np.allclose(signature.margins, np.abs(cosines))
    assert signature.value == sum(1 << j for j in range(256) if cosines[j] > 0)


def test_wide_distance_tracks_the_angle_four_times_finer() -> None:
    rng = np.random.default_rng(12)
    fingerprinter = VectorFingerprinter(64, seed=2)
    a, b = _pairs_at_angle(rng, math.radians(30), 200, 64)
    distances = [x.distance(y) for x, y in zip(fingerprinter.signatures_many(a), fingerprinter.signatures_many(b))]
    assert abs(float(np.mean(distances)) - 256 / 6) < 2.0  # 30 degrees: a sixth of the bits
    with pytest.raises(ValueError, match="all zeros"):
        fingerprinter.signatures_many(np.zeros((1, 64)))
