//! The GitHub layer's integration tests, one binary: the request shapes
//! against wiremock and the simulator, OIDC verification, the OpenAPI
//! examples and the no-force scan.

mod no_force;
mod oidc;
mod openapi_examples;
mod simulator_flows;
mod wiremock_api;
