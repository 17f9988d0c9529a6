"""Shuffle sharding (kube's pkg/util/shufflesharding) and APF's flow hash (apf_controller.go's hashFlowID).

A flow's hash picks a *hand* of ``hand_size`` distinct queues out of a *deck* of ``deck_size``:
the same flow always gets the same hand, and two flows rarely get the same one, so a heavy flow
can fill only the queues of its own hand.
"""

from __future__ import annotations

import hashlib
import math

# The bits of the hash a deal may use: with all 64 the last card is dealt unevenly (2:3 at
# most); 60 bits bring that down to 32:33 (kube's MaxHashBits).
MAX_HASH_BITS = 60
MAX_DECK_SIZE = 1 << 26
_MASK64 = (1 << 64) - 1


def hash_flow(flow_schema: str, distinguisher: str) -> int:
    """kube's hashFlowID: the first 8 bytes, little-endian, of sha256(flow schema, NUL, distinguisher)."""
    digest = hashlib.sha256(b"%s\0%s" % (flow_schema.encode(), distinguisher.encode())).digest()
    return int.from_bytes(digest[:8], "little")


def required_entropy_bits(deck_size: int, hand_size: int) -> int:
    """kube's quick, slightly conservative count of the hash bits a deal consumes (1 <= hand <= deck <= 2**26)."""
    return math.ceil(math.log2(deck_size) * hand_size)


class Dealer:
    """Deals hands of ``hand_size`` distinct cards in ``range(deck_size)`` from a 64-bit hash, in kube's order.

    Raises:
        ValueError: with kube's NewDealer messages, for sizes it refuses.
    """

    __slots__ = ("hand_size", "deck_size")

    def __init__(self, hand_size: int, deck_size: int) -> None:
        if deck_size <= 0 or hand_size <= 0:
            raise ValueError(f"deckSize {deck_size} or handSize {hand_size} is not positive")
        if hand_size > deck_size:
            raise ValueError(f"handSize {hand_size} is greater than deckSize {deck_size}")
        if deck_size > MAX_DECK_SIZE:
            raise ValueError(f"deckSize {deck_size} is impractically large")
        if required_entropy_bits(deck_size, hand_size) > MAX_HASH_BITS:
            raise ValueError(f"required entropy bits of deckSize {deck_size} and handSize {hand_size} "
                             f"is greater than {MAX_HASH_BITS}")
        self.hand_size = hand_size
        self.deck_size = deck_size

    def deal(self, hash_value: int) -> list[int]:
        """The hand for ``hash_value``, card by card in the order kube's Deal picks them."""
        hash_value &= _MASK64
        deck = self.deck_size
        remainders = []
        for i in range(self.hand_size):
            hash_value, remainder = divmod(hash_value, deck - i)
            remainders.append(remainder)
        hand = []
        for i, card in enumerate(remainders):
            # the i-th card is the remainder-th of the cards not dealt yet: step over the dealt
            # ones, in the reverse order of their dealing (kube's inner loop)
            for j in range(i, 0, -1):
                if card >= remainders[j - 1]:
                    card += 1
            hand.append(card)
        return hand

    def __repr__(self) -> str:
        return f"Dealer(hand_size={self.hand_size}, deck_size={self.deck_size})"
