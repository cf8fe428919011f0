"""Transactions (KIP-98): the transaction coordinator and the ``__transaction_state`` topic."""
