"""kube's shufflesharding_test.go cases, and APF's flow hash (issue 13)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from kapi.chain.flowcontrol.shufflesharding import MAX_HASH_BITS, Dealer, hash_flow, required_entropy_bits


def test_hash_flow_is_sha256_of_schema_nul_distinguisher_little_endian() -> None:
    # sha256("global-default\x00alice") = b7f6cd2cd43bdef4...: its first 8 bytes read little-endian
    assert hash_flow("global-default", "alice") == 0xF4DE3BD42CCDF6B7
    # sha256("catch-all\x00") = ad5e818fa46f546b...
    assert hash_flow("catch-all", "") == 0x6B546FA48F815EAD
    # the separator keeps ("ab", "c") and ("a", "bc") apart
    assert hash_flow("ab", "c") != hash_flow("a", "bc")


@pytest.mark.parametrize(("deck", "hand", "bits"), [(1024, 6, 60), (512, 8, 72), (64, 8, 48), (128, 6, 42)])
def test_required_entropy_bits(deck: int, hand: int, bits: int) -> None:
    assert required_entropy_bits(deck, hand) == bits


@pytest.mark.parametrize(("deck", "hand", "message"), [
    (-100, 8, "deckSize -100 or handSize 8 is not positive"),
    (100, 0, "deckSize 100 or handSize 0 is not positive"),
    (100, 101, "handSize 101 is greater than deckSize 100"),
    (1 << 27, 2, "deckSize 134217728 is impractically large"),
    (512, 8, "required entropy bits of deckSize 512 and handSize 8 is greater than 60"),
])
def test_new_dealer_refuses_as_kube(deck: int, hand: int, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        Dealer(hand_size=hand, deck_size=deck)
    assert str(exc.value) == message


def test_new_dealer_accepts_the_largest_entropy() -> None:
    dealer = Dealer(hand_size=6, deck_size=1024)
    assert (dealer.hand_size, dealer.deck_size) == (6, 1024)
    assert required_entropy_bits(1024, 6) == MAX_HASH_BITS


@pytest.mark.parametrize(("deck", "hand", "hash_value", "expected"), [
    # remainders 0,0,...: each card is the lowest not dealt yet
    (6, 6, 0, [0, 1, 2, 3, 4, 5]),
    # 417 = 7 + 10·(5 + 9·4): remainders 7, 5, 4, each below the ones dealt before
    (10, 3, 417, [7, 5, 4]),
    # 202 = 2 + 10·(2 + 9·2): remainders 2, 2, 2 step over the cards already dealt
    (10, 3, 202, [2, 3, 4]),
    # 333 = 5 + 8·(6 + 7·5): remainders 5, 6, 5; the last is bumped past 5 only (not past 6)
    (8, 3, 333, [5, 7, 6]),
])
def test_deal_order(deck: int, hand: int, hash_value: int, expected: list[int]) -> None:
    assert Dealer(hand_size=hand, deck_size=deck).deal(hash_value) == expected


def test_deal_uses_only_the_low_64_bits() -> None:
    dealer = Dealer(hand_size=8, deck_size=64)
    assert dealer.deal((1 << 64) + 12345) == dealer.deal(12345)


@pytest.mark.parametrize(("deck", "hand"), [(4, 4), (8, 8), (10, 10), (12, 12), (128, 8), (256, 7), (512, 6)])
def test_card_duplication(deck: int, hand: int) -> None:
    dealer = Dealer(hand_size=hand, deck_size=deck)
    rng = random.Random(deck * 100 + hand)
    for _ in range(200):
        cards = dealer.deal(rng.getrandbits(64))
        assert len(cards) == hand
        assert all(0 <= card < deck for card in cards)
        assert len(set(cards)) == hand


def _falling_factorial(n: int, m: int) -> int:
    return math.prod(range(n, n - m, -1))


@pytest.mark.parametrize(("deck", "hand"), [(16, 3), (10, 4), (12, 2)])
def test_uniform_distribution(deck: int, hand: int) -> None:
    """kube's TestUniformDistribution on smaller decks: every hash below deck!/(deck-hand)! deals each hand equally."""
    dealer = Dealer(hand_size=hand, deck_size=deck)
    deals = _falling_factorial(deck, hand)
    seen = Counter(tuple(sorted(dealer.deal(h))) for h in range(deals))
    assert len(seen) == math.comb(deck, hand)
    assert set(seen.values()) == {math.factorial(hand)}
