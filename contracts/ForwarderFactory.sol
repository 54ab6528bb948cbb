// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @title Forwarder
/// @notice Logic behind every deposit address. Each deposit address is an EIP-1167 clone of this contract that the
/// factory deploys at a CREATE2 address only when it first sweeps it, so a deposit address is an empty account until
/// then: payers send to it like to any wallet and nobody funds it with gas. Only the factory can move its funds, and
/// only to the destination the factory names (the treasury).
contract Forwarder {
    using SafeERC20 for IERC20;

    /// @notice The factory that deployed the implementation; clones share it (immutables live in the code).
    address public immutable factory;

    error OnlyFactory();
    error NativeTransferFailed();

    constructor() {
        factory = msg.sender;
    }

    /// @notice Accepts native coin sent after the clone exists (kept until the next sweep).
    receive() external payable {}

    /// @notice Moves the whole balance of each token in `tokens` and then of native coin to `to`.
    /// @dev Called by the factory through the clone (delegatecall), so `address(this)` is the deposit address.
    function flush(address[] calldata tokens, address payable to) external {
        if (msg.sender != factory) revert OnlyFactory();
        for (uint256 i = 0; i < tokens.length; i++) {
            IERC20 token = IERC20(tokens[i]);
            uint256 balance = token.balanceOf(address(this));
            if (balance > 0) token.safeTransfer(to, balance);
        }
        uint256 native = address(this).balance;
        if (native > 0) {
            (bool ok, ) = to.call{value: native}("");
            if (!ok) revert NativeTransferFailed();
        }
    }
}

/// @title ForwarderFactory
/// @notice Deploys deposit-address forwarders at CREATE2 addresses and sweeps them to the treasury, many per
/// transaction. The address of salt `s` is `predictDeterministicAddress(implementation, s, factory)`, computable
/// offline: `implementation` is the factory's first CREATE (nonce 1).
contract ForwarderFactory {
    /// @notice The forwarder logic every clone delegates to.
    address public immutable implementation;
    /// @notice Operator account: the only caller of `sweep`, `setTreasury` and `transferOwnership`.
    address public owner;
    /// @notice Where sweeps send funds.
    address payable public treasury;

    event ForwarderDeployed(bytes32 indexed salt, address indexed forwarder);
    /// @notice One forwarder was flushed (or failed to flush: `ok` false, the batch goes on).
    event Swept(bytes32 indexed salt, address indexed forwarder, bool ok);
    event TreasuryChanged(address indexed previous, address indexed current);
    event OwnershipTransferred(address indexed previous, address indexed current);

    error NotOwner();
    error ZeroAddress();

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    constructor(address owner_, address payable treasury_) {
        if (owner_ == address(0) || treasury_ == address(0)) revert ZeroAddress();
        implementation = address(new Forwarder());
        owner = owner_;
        treasury = treasury_;
        emit OwnershipTransferred(address(0), owner_);
        emit TreasuryChanged(address(0), treasury_);
    }

    /// @notice The deposit address of `salt`, deployed or not.
    function forwarderAddress(bytes32 salt) public view returns (address) {
        return Clones.predictDeterministicAddress(implementation, salt, address(this));
    }

    /// @notice For each salt: deploys its forwarder if absent, then moves its balance of every token in `tokens` and
    /// its native coin to the treasury. A forwarder whose flush reverts (e.g. a token blocks the transfer) is
    /// reported by `Swept(…, false)` and does not stop the batch.
    function sweep(bytes32[] calldata salts, address[] calldata tokens) external onlyOwner {
        address payable to = treasury;
        for (uint256 i = 0; i < salts.length; i++) {
            bytes32 salt = salts[i];
            address forwarder = forwarderAddress(salt);
            if (forwarder.code.length == 0) {
                Clones.cloneDeterministic(implementation, salt);
                emit ForwarderDeployed(salt, forwarder);
            }
            try Forwarder(payable(forwarder)).flush(tokens, to) {
                emit Swept(salt, forwarder, true);
            } catch {
                emit Swept(salt, forwarder, false);
            }
        }
    }

    function setTreasury(address payable treasury_) external onlyOwner {
        if (treasury_ == address(0)) revert ZeroAddress();
        emit TreasuryChanged(treasury, treasury_);
        treasury = treasury_;
    }

    function transferOwnership(address owner_) external onlyOwner {
        if (owner_ == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, owner_);
        owner = owner_;
    }
}
