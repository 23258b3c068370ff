//! Reselling what a buyer bought (the Hummingbird paper, §5: a buyer's opportunity cost is to
//! resell): the assets an account owns, and listing one of them on a marketplace, where it is
//! sold like the issuer's own listings (the issuer still delivers the reservation).

use alloy_primitives::{Address, U256};

use crate::contracts::{Asset, Deployment};
use crate::{Account, Ledger, LedgerError};

/// The assets `owner` holds (not listed, not in a redeem request), in id order, expired ones
/// included (they can no longer be listed or redeemed).
pub fn owned_assets<L: Ledger + ?Sized>(
    l: &L,
    d: &Deployment,
    owner: Address,
) -> Result<Vec<(U256, Asset)>, LedgerError> {
    let next = d.next_asset_id(l)?;
    let mut out = Vec::new();
    let mut id = U256::from(1);
    while id < next {
        let asset = d.asset_of(l, id)?;
        if asset.owner == owner {
            out.push((id, asset));
        }
        id += U256::from(1);
    }
    Ok(out)
}

/// Lists asset `asset` of `seller` on `marketplace` at `price_per_unit` (per kbit/s × s):
/// becomes a seller there first if it is not one, approves the market for the asset, and
/// returns the new listing's id.
pub fn list_asset<L: Ledger + ?Sized>(
    l: &mut L,
    d: &Deployment,
    seller: &Account,
    marketplace: u64,
    asset: U256,
    price_per_unit: u128,
) -> Result<U256, LedgerError> {
    if !d.is_seller(l, marketplace, seller.address())? {
        d.register_seller(l, seller, marketplace)?;
    }
    d.approve(l, seller, d.market, asset)?;
    d.create_listing(l, seller, marketplace, asset, price_per_unit)
}
