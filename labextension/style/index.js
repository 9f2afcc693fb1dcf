import './base.css';
import './colors.css';
import './profile.css';
