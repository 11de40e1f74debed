//! [`LocalHistory`] as the engine's [`HistoryStore`]: every step one call
//! of the history crate's repository, its failure a [`StoreError`] naming
//! the repository. The local store has no handoffs of its own (local mode's
//! handoffs are files) and nothing to consume or revoke.

use benchops::Sha256Digest;
use benchops::seal::{SealedRecord, VerifyError};

use super::{HistoryError, LocalHistory, StoreError};
use crate::sweep::error::StepError;
use crate::sweep::ports::{Advance, HistoryStore, TipIndex};

impl HistoryStore for LocalHistory {
    fn describe(&self) -> String {
        format!("{} (branch benchmark-history)", self.path().display())
    }

    fn blob_id(&self, bytes: &[u8]) -> String {
        self.blob_id_of(bytes)
    }

    async fn begin(&mut self) -> Result<(), StepError> {
        Ok(())
    }

    async fn tip(&mut self) -> Result<TipIndex, StepError> {
        self.tip_index()
            .map_err(|e| StepError::new("read the tip", StoreError::at(self.path())(e)))
    }

    async fn tip_within(&mut self, dirs: &[String]) -> Result<TipIndex, StepError> {
        self.tip_index_within(dirs)
            .map_err(|e| StepError::new("read the tip", StoreError::at(self.path())(e)))
    }

    async fn widen(&mut self, tip: &mut TipIndex, dirs: &[String]) -> Result<(), StepError> {
        LocalHistory::widen(self, tip, dirs)
            .map_err(|e| StepError::new("list the tip's tree", StoreError::at(self.path())(e)))
    }

    async fn read_blob(
        &mut self,
        _tip: &TipIndex,
        path: &str,
        blob: &str,
    ) -> Result<Vec<u8>, StepError> {
        let mut v = LocalHistory::read_blobs(self, &[blob])
            .map_err(|e| StepError::new(format!("read {path}"), StoreError::at(self.path())(e)))?;
        Ok(v.pop().unwrap_or_default())
    }

    async fn read_blobs(
        &mut self,
        _tip: &TipIndex,
        blobs: &[(&str, &str)],
    ) -> Result<Vec<Vec<u8>>, StepError> {
        let oids: Vec<&str> = blobs.iter().map(|(_, b)| *b).collect();
        LocalHistory::read_blobs(self, &oids)
            .map_err(|e| StepError::new("read history", StoreError::at(self.path())(e)))
    }

    async fn read_records(
        &mut self,
        _tip: &TipIndex,
        records: &[(&str, &str, &Sha256Digest)],
    ) -> Result<Vec<Result<SealedRecord, VerifyError>>, StepError> {
        let items: Vec<(&str, Option<&Sha256Digest>)> =
            records.iter().map(|(_, b, d)| (*b, Some(*d))).collect();
        self.read_verified(&items)
            .map_err(|e| StepError::new("read history", StoreError::at(self.path())(e)))
    }

    async fn commit(
        &mut self,
        tip: &TipIndex,
        files: &[(String, Vec<u8>)],
        message: &str,
        date_unix: i64,
    ) -> Result<String, StepError> {
        self.write_commit(tip, files, message, date_unix)
            .map(|(c, _)| c)
            .map_err(|e| StepError::new("write the commit", StoreError::at(self.path())(e)))
    }

    async fn advance(&mut self, tip: &TipIndex, commit: &str) -> Result<Advance, StepError> {
        match LocalHistory::advance(self, tip.commit.as_deref(), commit) {
            Ok(()) => Ok(Advance::Done),
            Err(HistoryError::RefMoved { .. }) => Ok(Advance::Moved),
            Err(e) => Err(StepError::new(
                "update the history branch",
                StoreError::at(self.path())(e),
            )),
        }
    }

    async fn end(&mut self) -> Result<(), StepError> {
        Ok(())
    }
}
